"""Terraform (.tf, .tf.json) -> Facts: ECS task and Batch job definitions inside jsonencode(...) or a heredoc,
kubernetes_* pods, docker_container; what Terraform evaluates is unknown; --fix shows the change, never writes it."""

from __future__ import annotations

import json
import shutil

import pytest

from shmdoctor.probe import terraform
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA, assert_one_line_error, forked_cli, validate

REAL = DATA / "real" / "terraform"
SEED = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 900 MiB


def targets(text: str, name: str = "main.tf", tmp_path=None) -> dict:
    """{target name after 'file:': facts} of a .tf's text."""
    found, passed_over = terraform.read(text, name)
    assert not passed_over, passed_over
    return {d.facts.target.name.split(":", 1)[1]: d.facts for d in found}


def lint_json(*args: str) -> tuple[int, dict]:
    proc = forked_cli("lint", *args, "--format", "json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, validate(json.loads(proc.stdout))


ECS = """
resource "aws_ecs_task_definition" "train" {
  family                   = "train"
  requires_compatibilities = ["EC2"]
  ipc_mode                 = %s
  container_definitions = jsonencode([
    {
      name   = "trainer"
      image  = "${var.repository}:latest"
      memory = 16 * 1024
      linuxParameters = { sharedMemorySize = %s }
      resourceRequirements = [{ type = "GPU", value = "4" }]
    }
  ])
}
"""


@pytest.mark.parametrize(
    "ipc, shm_size, size, source, mode, unknown",
    [
        ("null", "2048", 2 * GiB, "docker-shm", "private", None),
        ("null", "var.shm_mib", None, "docker-shm", "private", "sharedMemorySize is var.shm_mib"),
        ('"host"', "2048", None, "host-ipc", "host", "ipcMode: host uses the instance's /dev/shm"),
        ("var.ipc", "2048", None, "unknown", "unknown", "ipcMode is var.ipc"),
    ],
)
def test_ecs_task_definition_in_jsonencode(ipc, shm_size, size, source, mode, unknown):
    facts = targets(ECS % (ipc, shm_size))["aws_ecs_task_definition.train/trainer"]
    assert (facts.shm.size_bytes, facts.shm.source, facts.ipc.mode) == (size, source, mode)
    assert facts.memory.limit_bytes == 16 * GiB  # 16 * 1024 MiB: arithmetic on known numbers
    assert facts.gpus == "4" and facts.runtime == "ecs" and facts.form == "terraform"
    assert facts.target.line == 7  # the container's object
    assert any(unknown in u for u in facts.unreadable) if unknown else not facts.unreadable


def test_heredoc_json_and_batch_multinode():
    text = """
resource "aws_ecs_task_definition" "web" {
  family = "web"
  container_definitions = <<-EOF
    [{"name": "app", "image": "${var.image}", "memory": 512,
      "linuxParameters": {"sharedMemorySize": 256}}]
    EOF
}
resource "aws_batch_job_definition" "ddp" {
  name = "ddp"
  type = "multinode"
  node_properties = jsonencode({
    mainNode = 0
    numNodes = 2
    nodeRangeProperties = [{
      targetNodes = "0:"
      container = {
        image = "pytorch/pytorch"
        linuxParameters = { sharedMemorySize = 8192 }
        resourceRequirements = [{ type = "GPU", value = "8" }, { type = "MEMORY", value = "65536" }]
      }
    }]
  })
}
"""
    found = targets(text)
    assert found["aws_ecs_task_definition.web/app"].shm.size_bytes == 256 * MiB
    node = found["aws_batch_job_definition.ddp/0:"]
    assert (node.shm.size_bytes, node.memory.limit_bytes, node.gpus, node.runtime) == (8 * GiB, 64 * GiB, "8", "batch")


def test_what_terraform_evaluates_is_said_not_guessed(tmp_path):
    text = """
resource "aws_ecs_task_definition" "a" {
  family = "a"
  container_definitions = module.container.json_map_encoded_list
}
resource "aws_ecs_task_definition" "b" {
  family = "b"
  container_definitions = file("${path.module}/containers.json")
}
"""
    (tmp_path / "containers.json").write_text(
        '[{"name": "c", "image": "x", "linuxParameters": {"sharedMemorySize": 1024}}]'
    )
    found, passed_over = terraform.read(text, str(tmp_path / "main.tf"))
    assert passed_over == [
        f"{tmp_path / 'main.tf'}: aws_ecs_task_definition.a: container_definitions is "
        "module.container.json_map_encoded_list, known when Terraform runs"
    ]
    [b] = found  # file(...) of a JSON file beside it is read
    assert b.facts.shm.size_bytes == GiB


def test_kubernetes_deployment_blocks_as_the_api_object():
    text = """
resource "kubernetes_deployment_v1" "vllm" {
  metadata { name = "vllm" }
  spec {
    template {
      metadata { labels = { app = "vllm" } }
      spec {
        container {
          name  = "server"
          image = "vllm/vllm-openai:latest"
          resources { limits = { "nvidia.com/gpu" = 2, memory = "32Gi" } }
          volume_mount {
            name       = "dshm"
            mount_path = "/dev/shm"
          }
        }
        volume {
          name = "dshm"
          empty_dir {
            medium     = "Memory"
            size_limit = "8Gi"
          }
        }
      }
    }
  }
}
resource "kubernetes_cron_job_v1" "nightly" {
  metadata { name = "nightly" }
  spec {
    schedule = "0 0 * * *"
    job_template {
      metadata {}
      spec {
        template {
          metadata {}
          spec {
            host_ipc = true
            container {
              name  = "train"
              image = "pytorch/pytorch"
            }
          }
        }
      }
    }
  }
}
"""
    found = targets(text)
    server = found["Deployment/vllm"]
    assert (server.shm.size_bytes, server.shm.source, server.gpus) == (8 * GiB, "k8s-emptydir", "2")
    assert server.form == "terraform"
    assert found["CronJob/nightly"].ipc.mode == "host"  # host_ipc -> hostIPC


def test_docker_container_sizes_in_mib():
    text = """
resource "docker_container" "tgi" {
  name     = "tgi"
  image    = "ghcr.io/huggingface/text-generation-inference:latest"
  gpus     = "all"
  shm_size = 1024
  memory   = 8192
}
resource "docker_container" "host" {
  name     = "host"
  image    = "pytorch/pytorch"
  ipc_mode = "host"
}
resource "docker_container" "plain" {
  name  = "plain"
  image = "postgres:16"
}
"""
    found = targets(text)
    tgi = found["docker_container.tgi"]
    assert (tgi.shm.size_bytes, tgi.memory.limit_bytes, tgi.gpus, tgi.runtime) == (GiB, 8 * GiB, "all", "docker")
    assert tgi.server is not None and tgi.server.name == "tgi"
    assert found["docker_container.host"].shm.source == "host-ipc"
    plain = found["docker_container.plain"]
    assert plain.shm.size_bytes == 64 * MiB and not plain.unreadable  # the engine's default, known


def test_tf_json_syntax():
    body = {
        "resource": {
            "aws_ecs_task_definition": {
                "t": {
                    "family": "t",
                    "container_definitions": '${jsonencode([{name = "c", image = "x", linuxParameters = '
                    "{sharedMemorySize = 512}}])}",
                }
            }
        }
    }
    found, _ = terraform.read(json.dumps(body), "main.tf.json")
    assert [d.facts.shm.size_bytes for d in found] == [512 * MiB]


@pytest.mark.parametrize(
    "file, verdict, shm",
    [
        # a PyTorch container with a GPU and no sharedMemorySize: the default 64 MiB
        ("practice-cuda-ecs-task-definition.tf", "warn", 64 * MiB),
        # nginx on Fargate, in a heredoc with ${var} strings: nothing of ML
        ("aws-saa-ecs-main.tf", "ok", 64 * MiB),
        ("daytrader-batchjob.tf", "ok", 64 * MiB),
        ("config-lint-batch-privileged.tf", "ok", 64 * MiB),
        ("terrascan-ecs-inference-accelerator.tf", "ok", 64 * MiB),
    ],
)
def test_real_files(file, verdict, shm):
    code, doc = lint_json(str(REAL / file))
    [report] = doc["reports"]
    assert (code, report["verdict"], report["shm"]["size_bytes"]) == (0, verdict, shm)


def test_real_file_with_a_loader_is_fixed_in_hcl_and_not_written(tmp_path):
    path = tmp_path / "task.tf"
    shutil.copy(REAL / "practice-cuda-ecs-task-definition.tf", path)
    before = path.read_text()
    proc = forked_cli("lint", str(path), *SEED, "--fix")
    assert proc.returncode == 1
    assert path.read_text() == before
    assert "not written (Terraform's HCL is not rewritten" in proc.stderr
    assert "linuxParameters = { sharedMemorySize = 1536 }" in proc.stderr  # 900 MiB + 25%, rounded up, in MiB
    code, doc = lint_json(str(path), *SEED)
    fix = doc["reports"][0]["findings"][0]["fixes"][0]
    assert (fix["form"], fix["text"].splitlines()[0]) == ("terraform", "linuxParameters = { sharedMemorySize = 1536 }")


def test_a_folder_picks_up_tf_files(tmp_path):
    shutil.copy(REAL / "practice-cuda-ecs-task-definition.tf", tmp_path / "ecs.tf")
    (tmp_path / "variables.tf").write_text('variable "x" {\n  default = 1\n}\n')
    proc = forked_cli("lint", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "aws_ecs_task_definition.pytorch_gpu_task/pytorch-gpu-container" in proc.stdout


@pytest.mark.parametrize(
    "text, message",
    [
        ('resource "x" "y" {\n  a = \n}\n', "main.tf:2: not HCL: unexpected"),
        ("x = " + "[" * 200 + "]" * 200 + "\n", "nested deeper than 64 levels"),
        ("locals {\n  a = [" + ",".join(["1"] * 40_000) + "]\n}\n", "more than 60,000 tokens of HCL"),
        ('resource "docker_container" "a" {\n  shm_size = ' + "9" * 80 + "\n}\n", "a number of 80 digits"),
        ('resource "docker_container" "a" {\n  shm_size = "1g"\n}\n', "shm_size must be a whole number of MiB"),
    ],
)
def test_bad_hcl_is_one_line_and_exit_2(tmp_path, text, message):
    path = tmp_path / "main.tf"
    path.write_text(text)
    assert_one_line_error(forked_cli("lint", str(path), timeout=30), 2, message)


def test_a_broken_tf_in_a_folder_is_an_error_the_others_still_judged(tmp_path):
    shutil.copy(REAL / "practice-cuda-ecs-task-definition.tf", tmp_path / "ecs.tf")
    (tmp_path / "broken.tf").write_text('resource "x" {\n')
    proc = forked_cli("lint", str(tmp_path))
    assert proc.returncode == 2
    assert "broken.tf:2: not HCL" in proc.stdout and "pytorch-gpu-container" in proc.stdout
