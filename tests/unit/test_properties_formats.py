"""Every reader against text made of its own format's pieces in any order (Hypothesis, issue 38 item 3): a compose
file, a Kubernetes manifest, a workflow, a CloudFormation template (YAML); a devcontainer and an ECS definition
(JSON); a Quadlet unit and pod; a shell script, a Makefile, a Jenkinsfile (docker run and its arguments); Terraform
and Nomad (HCL); a log for explain. Through the CLI in this process, with --diff where lint writes (its editors read
the same file): exit 0, 1 or 2, one line at 2, nothing else escapes (an internal error is exit 70)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shmdoctor.cli import main
from shmdoctor.diagnose.scan import anchors

LOADER = ["--batch-size", "8", "--num-workers", "2", "--sample-bytes", "1m"]
HOSTILE = ["\n", " ", "\t", "'", '"', "\\", "#", "${", "}", "$(", ")", "`", "１２", "\x1b[2J", "\u2028", "\r\n", "\x00"]

YAML = [
    "services:\n", "  t:\n", "    image: pytorch/pytorch\n", "    shm_size: ", "64m", "2Gi", "' 1g'", "1e3m", "\n",
    "    ipc: ", "host", "service:t", "    tmpfs:\n", "      - /dev/shm:size=1g\n", "    mem_limit: 1g\n",
    "    deploy:\n      resources:\n        limits:\n          memory: 2g\n", "  ", "- ", ": ", "{", "}", "[", "]",
    ", ", "&a ", "*a", "<<: *a\n", "!reset ", "!override ", "!Ref ", "!Sub ", "${SHM:-1g}", "---\n", "x-c: &a\n",
    "apiVersion: v1\n", "kind: Pod\n", "kind: Job\n", "metadata:\n  name: p\n", "spec:\n", "  containers:\n",
    "  - name: c\n    image: x\n", "    volumeMounts:\n    - {name: dshm, mountPath: /dev/shm}\n",
    "  volumes:\n  - name: dshm\n    emptyDir: {medium: Memory, sizeLimit: 1Gi}\n", "jobs:\n  j:\n",
    "    container:\n      image: x\n      options: --shm-size 1g\n", "runs-on: x\n",
    "Resources:\n  T:\n    Type: AWS::ECS::TaskDefinition\n", "    Properties:\n",
    "      ContainerDefinitions:\n      - Image: x\n        LinuxParameters: {SharedMemorySize: 64}\n",
    "resources:\n  shm_size: 1g\n", "command: python train.py\n", "labels:\n  shmdoctor.loader: batch_size=1\n",
    "# shmdoctor: ignore=default-shm\n", "include:\n  - other.yml\n", "extends: {service: t}\n",
]  # fmt: skip
JSON = [
    "{", "}", "[", "]", ", ", ": ", '"runArgs"', '"--shm-size=1g"', '"--ipc=host"', '"image"', '"x"', "// c\n",
    "/* c */", '"containerDefinitions"', '"linuxParameters"', '"sharedMemorySize"', "64", "-1", "1e400", "true",
    "null", '"memory"', '"tmpfs"', '"containerPath"', '"/dev/shm"', '"size"', '"hostRequirements"', '"gpu"',
    '"mounts"', '"source=/dev/shm,target=/dev/shm,type=bind"', '"family"', '"ipcMode"', '"host"', ",", "\n",
]  # fmt: skip
QUADLET = [
    "[Container]\n", "[Pod]\n", "[Unit]\n", "[Service]\n", "Image=x\n", "ShmSize=", "64m", "1g", "\n",
    "PodmanArgs=", "--shm-size=", "--memory 2g", "--ipc=host", "Mount=type=tmpfs,destination=/dev/shm", ",tmpfs-size=",
    ",read-only=true", "Pod=p.pod\n", "Memory=1g\n", "Tmpfs=/dev/shm:size=", "Volume=/dev/shm:/dev/shm\n", "%h",
    " \\\n", "=", ";", "Ipc=host\n", "AddDevice=nvidia.com/gpu=all\n",
]  # fmt: skip
SCRIPT = [
    "docker run", "podman run", "nerdctl run", " --shm-size", "=", " 64m", " 1g", " -v /dev/shm:/dev/shm",
    " --ipc=host", " --ipc", " --tmpfs /dev/shm:size=1g", " --mount type=tmpfs,dst=/dev/shm", " \\\n", "\n",
    " image", " pytorch/pytorch", " -m 2g", " --memory=", " --gpus all", " python train.py", ";", " && ", " | ",
    "sudo ", "exec ", "A=1 ", "<<EOF\n", "EOF\n", "$(docker run x)", "${SHM:-1g}", " -it", " --rm", " -e X=1",
    " --", "target:\n\t", "\t@", "#!/bin/sh\n",
]  # fmt: skip
JENKINS = [
    "pipeline {\n", "agent {\n", "docker {\n", "image 'x'\n", "args '--shm-size=1g'\n", "args \"--ipc=host\"\n",
    "}\n", "dockerfile true\n", "docker.image('x').inside('--shm-size 1g') {\n", ".inside {\n",
    "sh 'docker run --shm-size 1g x'\n", 'sh """\n', "docker run -v /dev/shm:/dev/shm x\n", '"""\n', "'''",
    "// c\n", "/* c */", "stages {\n", "stage('s') {\n", "steps {\n", "node {\n", "\n",
]  # fmt: skip
HCL = [
    'resource "aws_ecs_task_definition" "t" {\n', 'resource "docker_container" "c" {\n',
    'resource "kubernetes_pod" "p" {\n', "container_definitions = jsonencode([{", 'image = "x"', ", ", "}])\n",
    "shm_size = 1024\n", "memory = 2048\n", "var.x", '"${var.x}"', "<<EOF\n", "EOF\n", "= ", "{\n", "}\n", "[", "]",
    "linuxParameters = { sharedMemorySize = 64 }", 'job "j" {\n', 'group "g" {\n', 'task "t" {\n',
    'driver = "docker"\n', "config {\n", 'ipc_mode = "host"\n', "resources {\n", "device \"nvidia/gpu\" {}\n",
    "# c\n", "/* c */", "[[", "]]", "{{ .x }}",
]  # fmt: skip
LOG = [
    *anchors(), "\n", "RuntimeError: ", " (pid 13) ", "/dev/shm", "No space left on device (28)", " 64M ",
    "shm   64M   0  64M   0% /dev/shm\n", "docker run --shm-size=", "2g", "9999999999999999999999999", "１２",
    "2024-05-01T10:00:00.123456789Z stderr F ", "May 01 10:00:00 host python3[1]: ", "\r", "\x1b[31m", "    limits:\n",
    "      memory: ", "[0] NCCL WARN ", "localRanks ", "(size 9637888)", "Killed\n", "OSError: [Errno 28] ",
]  # fmt: skip


def texts(pieces: list[str]):
    return st.lists(st.sampled_from(pieces + HOSTILE), max_size=30).map("".join)


def run(name: str, text: str, *args: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", errors="surrogatepass", newline="") as f:
            f.write(text)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            code = main([args[0], path, *args[1:]])
    assert code in (0, 1, 2), (code, err.getvalue()[-2000:])
    assert code != 2 or len(err.getvalue().strip().splitlines()) == 1, err.getvalue()


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(texts(YAML), st.sampled_from(["compose.yml", "pod.yaml", ".gitlab-ci.yml", ".github/workflows/ci.yml"]))
def test_any_yaml_of_the_formats_pieces(text, name):
    run(name, text, "lint", "--diff", *LOADER)


@SETTINGS
@given(texts(JSON), st.sampled_from(["task.json", ".devcontainer/devcontainer.json"]))
def test_any_json_of_the_formats_pieces(text, name):
    run(name, text, "lint", "--diff", *LOADER)


@SETTINGS
@given(texts(QUADLET), st.sampled_from(["train.container", "train.pod"]))
def test_any_quadlet_unit(text, name):
    run(name, text, "lint", "--diff", *LOADER)


@SETTINGS
@given(texts(SCRIPT), st.sampled_from(["run.sh", "Makefile", "job.sbatch"]))
def test_any_script(text, name):
    run(name, text, "lint", "--diff", *LOADER)


@SETTINGS
@given(texts(JENKINS))
def test_any_jenkinsfile(text):
    run("Jenkinsfile", text, "lint", "--diff", *LOADER)


@SETTINGS
@given(texts(HCL), st.sampled_from(["main.tf", "job.nomad"]))
def test_any_hcl(text, name):
    run(name, text, "lint", *LOADER)


@SETTINGS
@given(texts(LOG))
def test_any_log(text):
    run("train.log", text, "explain")


# --- each format's own shape, with hostile values where its sizes, modes and arguments go -------------------------

ARGS = [
    "--shm-size", "--shm-size=", "64m", "1g", "2Gi", "１２m", "-1", "0", "1e400", "--ipc", "--ipc=", "host", "private",
    "none", "container:x", "shareable", "--tmpfs", "/dev/shm", "/dev/shm:size=1g", "/dev/shm:size=", "-v", "--volume",
    "/dev/shm:/dev/shm", "/dev:/dev", "--mount", "type=tmpfs,dst=/dev/shm,tmpfs-size=1g",
    "--mount=type=bind,src=/dev/shm,dst=/dev/shm", "-m", "--memory", "2g", "--gpus", "all", '"device=0,1"', "-it",
    "--rm", "-e", "A=1", "image", "pytorch/pytorch", "python", "train.py", "--", "$X", "${X:-1g}", "$(echo 1g)",
    '"1g"', "'1g'", "\\\n", "&&", ";", "|", "#", "--shm-size=$SHM", "--ipc=${IPC:-host}", "--pod", "p",
    "--network", "--privileged",
]  # fmt: skip
WORDS = [
    "64m", "1g", "2Gi", "1024", "0", "-1", "1e400", "NaN", "", " ", "１２", "${x}", "var.x", "host", "private", "none",
    "container:x", "/dev/shm", "/dev/shm:size=1g", "9" * 30, "\x1b[2J", "Memory", "all", "'", '"', "\\",
]  # fmt: skip
LEAVES = st.sampled_from(WORDS) | st.integers(-(2**70), 2**70) | st.floats() | st.booleans() | st.none()
ANY = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(WORDS), inner, max_size=2),
    max_leaves=4,
)
ARGV = st.lists(st.sampled_from(ARGS), max_size=10).map(" ".join)
ENGINES = st.sampled_from(["docker", "podman", "nerdctl", "sudo docker", "exec podman"])
QUADLET_KEYS = ["ShmSize", "PodmanArgs", "Mount", "Tmpfs", "Volume", "Memory", "Pod", "Ipc", "AddDevice", "Exec"]
COMPOSE_KEYS = ["shm_size", "ipc", "tmpfs", "mem_limit", "deploy", "labels", "image", "command", "volumes"]
RULES = ["default-shm", "shm-too-small", ",", " ", "*", "=", "ignore", "１", "\x1b", "all"]


@SETTINGS
@given(st.lists(st.tuples(ENGINES, ARGV), min_size=1, max_size=3), st.sampled_from(["run.sh", "Makefile"]))
def test_any_run_command_of_a_script(commands, name):
    lines = [f"{engine} run {args}" for engine, args in commands]
    text = "t:\n" + "".join(f"\t{line}\n" for line in lines) if name == "Makefile" else "#!/bin/sh\n" + "\n".join(lines)
    run(name, text, "lint", "--diff", *LOADER)


JENKINS_SCRIPTED = "node {{\n  docker.image('x').inside('{args}') {{\n    sh 'docker run {command}'\n  }}\n}}\n"
JENKINS_DECLARATIVE = "pipeline {{\n  agent {{\n    docker {{\n      image 'x'\n      args '{args}'\n    }}\n  }}\n}}\n"


@SETTINGS
@given(ARGV, ARGV, st.sampled_from([JENKINS_SCRIPTED, JENKINS_DECLARATIVE]))
def test_any_docker_agent_of_a_jenkinsfile(args, command, template):
    run("Jenkinsfile", template.format(args=args, command=command), "lint", "--diff", *LOADER)


@SETTINGS
@given(st.lists(st.sampled_from(ARGS), max_size=8), ANY, ANY, st.booleans())
def test_any_devcontainer(run_args, mounts, gpu, commented):
    text = json.dumps({"image": "x", "runArgs": run_args, "mounts": mounts, "hostRequirements": {"gpu": gpu}})
    text = text.replace(", ", ", // c\n") if commented else text
    run(".devcontainer/devcontainer.json", text, "lint", "--diff", *LOADER)


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(QUADLET_KEYS), st.sampled_from(WORDS) | ARGV), max_size=6), st.booleans())
def test_any_quadlet_keys(lines, pod):
    head = "[Pod]\n" if pod else "[Container]\nImage=x\n"
    run("t.pod" if pod else "t.container", head + "".join(f"{k}={v}\n" for k, v in lines), "lint", "--diff", *LOADER)


def _hcl(value) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_hcl, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_hcl(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


DOCKER_TF = """resource "docker_container" "c" {{
  image = "x"
  shm_size = {shm}
  ipc_mode = {ipc}
  memory = {memory}
}}
"""
ECS_TF = """resource "aws_ecs_task_definition" "t" {{
  family = "t"
  ipc_mode = {ipc}
  container_definitions = jsonencode([
    {{ name = "c", image = "x", memory = {memory}, linuxParameters = {{ sharedMemorySize = {shm} }} }}
  ])
}}
"""
NOMAD = """job "j" {{
  group "g" {{
    task "t" {{
      driver = "docker"
      config {{
        image = "x"
        shm_size = {shm}
        ipc_mode = {ipc}
      }}
      resources {{
        memory = {memory}
      }}
    }}
  }}
}}
"""


@SETTINGS
@given(ANY, ANY, ANY, st.sampled_from([("main.tf", DOCKER_TF), ("main.tf", ECS_TF), ("job.nomad", NOMAD)]))
def test_any_value_in_terraform_and_nomad(shm, ipc, memory, template):
    name, text = template
    run(name, text.format(shm=_hcl(shm), ipc=_hcl(ipc), memory=_hcl(memory)), "lint", *LOADER)


def _definition(kind: str, shm, memory, args: str) -> dict:
    container = {"Image": "x", "Memory": memory, "LinuxParameters": {"SharedMemorySize": shm}}
    return {
        "cloudformation": {
            "Resources": {
                "T": {"Type": "AWS::ECS::TaskDefinition", "Properties": {"ContainerDefinitions": [container]}}
            }
        },
        "github": {
            "on": "push",
            "jobs": {
                "j": {
                    "runs-on": "x",
                    "container": {"image": "x", "options": args},
                    "steps": [{"run": f"docker run {args}"}],
                }
            },
        },
        "gitlab": {
            "j": {"image": "x", "services": [shm], "variables": {"X": memory}, "script": [f"docker run {args}"]}
        },
        "azureml": {
            "$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json",
            "command": "python train.py",
            "environment": "azureml:x:1",
            "resources": {"shm_size": shm, "instance_count": memory},
        },
        "skypilot": {
            "resources": {"accelerators": shm, "image_id": "docker:x"},
            "config": {"docker": {"run_options": args}},
            "run": "python train.py",
        },
    }[kind]


@SETTINGS
@given(ANY, ANY, ARGV, st.sampled_from(["cloudformation", "github", "gitlab", "azureml", "skypilot"]))
def test_any_value_in_the_other_yaml_definitions(shm, memory, args, kind):
    import yaml

    name = {"github": ".github/workflows/ci.yml", "gitlab": ".gitlab-ci.yml"}.get(kind, f"{kind}.yaml")
    run(name, yaml.safe_dump(_definition(kind, shm, memory, args), allow_unicode=True), "lint", "--diff", *LOADER)


@SETTINGS
@given(ANY, ANY)
def test_any_value_in_an_ecs_definition(shm, memory):
    tmpfs = [{"containerPath": "/dev/shm", "size": shm}]
    container = {
        "name": "c",
        "image": "x",
        "memory": memory,
        "linuxParameters": {"sharedMemorySize": shm, "tmpfs": tmpfs},
    }
    run("task.json", json.dumps({"family": "t", "containerDefinitions": [container]}), "lint", "--diff", *LOADER)


@SETTINGS
@given(st.dictionaries(st.sampled_from(COMPOSE_KEYS), ANY, max_size=4), st.booleans())
def test_fix_of_any_compose_service_is_written_once(service, commented):
    """--fix of whatever a service holds: exit 0, 1 or 2, and a second --fix finds nothing more to write."""
    import yaml

    text = yaml.safe_dump({"services": {"t": {"image": "pytorch/pytorch", **service}}}, allow_unicode=True)
    text = text.replace("\n", "  # kept\n", 1) if commented else text
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "compose.yml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            code = main(["lint", path, "--fix", *LOADER])
            assert code in (0, 1, 2), err.getvalue()
            with open(path, encoding="utf-8") as f:
                fixed = f.read()
            main(["lint", path, "--fix", *LOADER])
        with open(path, encoding="utf-8") as f:
            assert f.read() == fixed


def _corpus() -> list[str]:
    import yaml

    from tests.helpers import DATA

    return [c["text"] for c in yaml.safe_load((DATA / "explain" / "cases.yaml").read_text()) if "text" in c]


CORPUS = _corpus()
NUMBERS = st.sampled_from(["0", "1", "99999999999999999999999999999999999999999", "1.5", "１２", "-3", "1e400", ""])


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(CORPUS), st.lists(NUMBERS, min_size=1, max_size=4)), min_size=1, max_size=4))
def test_any_number_in_a_real_failure_text(lines):
    """The texts the catalogue was written for, each number in them replaced: a size past any machine, a
    full-width digit, nothing: explain says what it finds, or nothing, never an error of its own."""
    import itertools
    import re

    def renumbered(text: str, numbers: list[str]) -> str:
        each = itertools.cycle(numbers)
        return re.sub(r"[0-9]+", lambda _: next(each), text)

    log = "\n".join(renumbered(text, numbers) for text, numbers in lines)
    run("train.log", log + "\n", "explain", "--format", "json")


@SETTINGS
@given(st.lists(st.sampled_from(RULES), max_size=5).map("".join), st.booleans())
def test_any_suppression_comment_or_label(rules, as_label):
    where = f"    labels:\n      shmdoctor.ignore: {json.dumps(rules)}\n" if as_label else ""
    text = f"services:\n  t:  # shmdoctor: ignore={rules}\n    image: pytorch/pytorch\n{where}"
    run("compose.yml", text, "lint", *LOADER)


# --- the size readers alone: a size, or one line ------------------------------------------------------------------


@given(st.text(max_size=24) | st.sampled_from(WORDS))
def test_any_text_is_a_compose_size_or_one_line(text):
    from shmdoctor.errors import UsageError
    from shmdoctor.limits import MAX_BYTES
    from shmdoctor.sizes import compose_size, parse_tmpfs_size

    try:
        assert 0 < compose_size(text) <= MAX_BYTES
    except UsageError as e:
        assert str(e) and "\n" not in str(e)
    assert parse_tmpfs_size(text) is None or 0 <= parse_tmpfs_size(text) <= MAX_BYTES
