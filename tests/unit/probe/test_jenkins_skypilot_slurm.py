"""Issue 41's platforms: Jenkins docker agents (declarative and scripted) and their `sh` steps' docker run,
SkyPilot tasks (a /dev/shm that follows the machine), Slurm with pyxis/enroot (the node's /dev/shm, to check there);
--fix writes a Jenkins agent's args."""

from __future__ import annotations

import json

from shmdoctor.cli import main
from shmdoctor.errors import UsageError
from shmdoctor.probe import documents, jenkins, shell, skypilot
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 1.5 GiB with the margin
JENKINSFILE = """pipeline {
    agent {
        docker {
            image 'nvcr.io/nvidia/pytorch:24.01-py3'
            args '--gpus all --shm-size 64m -v /data:/data'
        }
    }
    stages {
        stage('unit') { steps { sh 'docker run --gpus all pytorch/pytorch python train.py' } }
        stage('gpu') {
            steps {
                script {
                    docker.image('pytorch/pytorch').inside { sh 'python train.py' }
                    docker.image("rocm/pytorch").inside('--device /dev/kfd') { sh 'python train.py' }
                }
            }
        }
    }
}
"""


def test_agents_and_sh_steps_as_the_plugin_and_the_shell_run_them():
    found = {d.facts.target.name: d.facts for d in jenkins.probe(JENKINSFILE, "Jenkinsfile")}
    assert list(found) == ["Jenkinsfile:3", "Jenkinsfile:9", "Jenkinsfile:13", "Jenkinsfile:14"]
    agent = found["Jenkinsfile:3"]
    assert (agent.shm.size_bytes, agent.gpus, agent.form) == (64 * MiB, "all", "jenkins")
    assert found["Jenkinsfile:9"].form is None and found["Jenkinsfile:9"].ml_signs == (
        "image pytorch/pytorch",
        "command train.py",
    )  # an sh step's docker run: a script's, said as docker's flags
    assert [found[n].gpus for n in ("Jenkinsfile:13", "Jenkinsfile:14")] == [None, "all"]


def test_fix_writes_each_agents_args(tmp_path, capsys):
    path = tmp_path / "Jenkinsfile"
    path.write_text(JENKINSFILE + "node {\n  docker.image('pytorch/pytorch').inside() {\n    sh 'x'\n  }\n}\n")
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    after = path.read_text()
    assert "args '--gpus all --shm-size 1536m -v /data:/data'" in after
    assert "sh 'docker run --shm-size=1536m --gpus all pytorch/pytorch python train.py'" in after
    assert "docker.image('pytorch/pytorch').inside('--shm-size=1536m') { sh 'python train.py' }" in after
    assert "inside('--shm-size=1536m --device /dev/kfd')" in after
    assert "docker.image('pytorch/pytorch').inside('--shm-size=1536m') {\n    sh 'x'" in after
    assert main(["lint", str(path), "--fix", *LOADER]) == 0 and path.read_text() == after  # nothing more
    declarative = tmp_path / "decl" / "Jenkinsfile"
    declarative.parent.mkdir()
    declarative.write_text("pipeline {\n  agent {\n    docker {\n      image 'pytorch/pytorch'\n    }\n  }\n}\n")
    assert main(["lint", str(declarative), "--fix", *LOADER]) == 1
    assert declarative.read_text() == (
        "pipeline {\n  agent {\n    docker {\n      image 'pytorch/pytorch'\n"
        "      args '--shm-size=1536m'\n    }\n  }\n}\n"
    )


def test_a_real_jenkinsfiles_gpu_agent_is_warned():
    [dms] = jenkins.probe((DATA / "real" / "jenkins" / "dms" / "Jenkinsfile").read_text(), "Jenkinsfile")
    assert (dms.facts.gpus, dms.facts.shm.size_bytes) == ("all", 64 * MiB)  # --runtime=nvidia


def test_skypilot_tasks_follow_the_machine_unless_run_options_size_it(capsys):
    [doc] = documents.parse((DATA / "real" / "skypilot" / "vllm-serve-openai-api-docker.yaml").read_text(), "t.yaml")
    assert skypilot.is_task(doc.body)
    [task] = skypilot.probe(doc)
    assert (task.facts.shm.source, task.facts.gpus, task.facts.server.name) == ("host", "1", "vllm")  # type: ignore[union-attr]
    sized = {"resources": {"image_id": "docker:x", "accelerators": "H100:8"}, "run": "python train.py",
             "config": {"docker": {"run_options": ["--shm-size=16g"]}}}  # fmt: skip
    [task] = skypilot.probe(documents.Document("t.yaml", 0, sized))
    assert (task.facts.shm.size_bytes, task.facts.gpus) == (16 * GiB, "8")
    assert not skypilot.is_task({"resources": {"limits": {"memory": "1Gi"}}})  # a chart's values are no task


def test_a_docker_run_in_a_skypilot_run_is_a_container_of_its_own_at_its_line():
    """skypilot-org/skypilot's axolotl task trains in a docker run of its `run` (01b472fc): the engine's 64 MiB."""
    [doc] = documents.parse((DATA / "real" / "skypilot" / "axolotl-docker.yaml").read_text(), "t.yaml")
    login, train, task = skypilot.probe(doc)
    assert [d.facts.target.name for d in (login, train, task)] == ["t.yaml:16", "t.yaml:22", "t.yaml:axolotl"]
    assert (train.facts.shm.size_bytes, train.facts.shm.source, train.facts.gpus) == (64 * MiB, "docker-shm", "all")
    assert train.facts.ml_signs == ("command accelerate",) and login.facts.flags == {"loads-nothing"}


def test_slurm_pyxis_is_the_nodes_shm_and_says_what_to_check(tmp_path, capsys):
    text = (
        "#!/bin/bash\n#SBATCH --gres=gpu:8\n"
        "srun -N 2 --container-image=nvcr.io#nvidia/pytorch:24.01-py3 \\\n  torchrun train.py\nsrun hostname\n"
    )
    [found] = shell.probe(text, "job.sbatch")
    facts = found.facts
    assert (facts.target.name, facts.shm.source, facts.gpus) == ("job.sbatch:3", "host", "8")
    assert facts.ml_signs == ("image nvcr.io#nvidia/pytorch:24.01-py3", "command torchrun")
    path = tmp_path / "job.sbatch"
    path.write_text(text)
    assert main(["lint", str(path), *LOADER, "--format", "json"]) == 0
    [report] = json.loads(capsys.readouterr().out)["reports"]
    assert report["verdict"] == "warn" and "srun df -h /dev/shm" in report["findings"][0]["message"]


def test_dockerfile_true_is_the_repositorys_dockerfile_run_without_args(tmp_path):
    """Rjected/cuda-timelock's `agent { dockerfile true }` (the Pipeline Syntax's shorthand): a container of its
    own at docker's 64 MiB; --fix turns the shorthand into a block with the args, once."""
    real = (DATA / "real" / "jenkins" / "cuda-timelock" / "Jenkinsfile").read_text()
    [agent] = jenkins.probe(real, "Jenkinsfile")
    assert (agent.facts.target.line, agent.facts.shm.size_bytes, agent.facts.gpus) == (2, 64 * MiB, None)
    path = tmp_path / "Jenkinsfile"
    path.write_text(real)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    assert path.read_text() == real.replace("dockerfile true", "dockerfile { args '--shm-size=1536m' }")
    assert main(["lint", str(path), "--fix", *LOADER]) == 0 and "dockerfile {" in path.read_text()


PIPELINE_STRINGS = """pipeline {
    environment {
        RUN = "docker run --rm --gpus all \\
            --shm-size 64m"
        IMAGE = 'pytorch/pytorch'
    }
    stages {
        stage('a') { steps { sh "${RUN} ${IMAGE} python train.py" } }
        stage('b') { steps { sh '$RUN $IMAGE python train.py' } }
        stage('c') { steps { script { def LOCAL = "docker run --gpus all pytorch/pytorch python train.py"
            sh '$LOCAL'
            sh "${LOCAL}"
            sh "\\$LOCAL"
        } } }
        stage('d') { steps { sh "docker run --gpus all ${TWICE} python train.py" } }
    }
}
TWICE = 'a'
TWICE = 'b'
"""


def test_sh_steps_get_the_pipelines_own_strings_as_groovy_and_the_shell_give_them(tmp_path, capsys):
    """environment{} values are the shell's too; a `def` string is Groovy's only (a "..." step's ${NAME}, not the
    shell's $NAME, nor Groovy's escaped \\$NAME); a name set to two values stays unknown."""
    found = {d.facts.target.line: d.facts for d in jenkins.probe(PIPELINE_STRINGS, "Jenkinsfile")}
    assert sorted(found) == [8, 9, 12, 15]
    for line in (8, 9, 12):
        assert (found[line].shm.size_bytes, found[line].gpus) == (64 * MiB, "all"), line
    assert found[8].ml_signs == ("image pytorch/pytorch", "command train.py")
    assert 'sh "docker run --gpus all ${TWICE} python' in jenkins.steps(PIPELINE_STRINGS)[0]  # set twice: unknown
    path = tmp_path / "Jenkinsfile"
    path.write_text(PIPELINE_STRINGS)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1  # only the plain step's run is written
    assert path.read_text() == PIPELINE_STRINGS.replace(
        "run --gpus all ${TWICE}", "run --shm-size=1536m --gpus all ${TWICE}"
    )
    assert "Jenkinsfile:8: not written: its docker run is put together from the pipeline's own strings" in (
        capsys.readouterr().err
    )


def test_a_real_pipelines_docker_run_held_in_its_environment():
    """ROCm/Megatron-LM's Jenkinsfile runs `${DOCKER_RUN_CMD} ${DOCKER_RUN_ARGS} ... ${env.DOCKER_IMAGE}`, the run
    command set in its environment block with --ipc=host: the host's /dev/shm."""
    text = (DATA / "real" / "jenkins" / "rocm-megatron-lm" / "Jenkinsfile").read_text()
    [run] = jenkins.probe(text, "Jenkinsfile")
    assert (run.facts.target.line, run.facts.ipc.mode, run.facts.shm.source) == (82, "host", "host-ipc")


def test_pipeline_strings_put_in_are_bounded():
    """A 100 KiB environment string named 100 times in one sh step is 10 MiB of shell: one line, not a parse."""
    text = 'pipeline {\n  environment {\n    BIG = "' + "x" * 100_000 + '"\n  }\n'
    text += "  stages { stage('a') { steps { sh \"" + "${BIG} " * 100 + '" } } }\n}\n'
    try:
        jenkins.probe(text, "Jenkinsfile")
    except UsageError as e:
        assert str(e) == "Jenkinsfile: more than 8 MiB of sh steps once the pipeline's strings are in"
    else:
        raise AssertionError("read past the bound")


SCRIPTED_RUNS = """node {
    docker.image('mysql:8').withRun('-e MYSQL_ROOT_PASSWORD=x') { db ->
        docker.image('pytorch/pytorch').inside("--gpus all --link ${db.id}:db") { sh 'python train.py' }
    }
    docker.image('nvcr.io/nvidia/pytorch:24.01-py3').withRun('--gpus all', 'python train.py') { c -> }
    docker.image('pytorch/pytorch').run()
    docker.image('pytorch/pytorch').inside(gpuArgs) { sh 'python train.py' }
}
"""


def test_scripted_with_run_and_run_start_containers_of_their_own(tmp_path, capsys):
    """`.withRun('args', 'command')` and `.run('args')` start a container as `.inside` does (the Docker Pipeline
    plugin's docker run -d); args given as a Groovy value are unknown and --fix says so rather than write
    `.inside('...')(gpuArgs)`."""
    found = {d.facts.target.line: d.facts for d in jenkins.probe(SCRIPTED_RUNS, "Jenkinsfile")}
    assert sorted(found) == [2, 3, 5, 6, 7]
    assert (found[2].gpus, found[2].ml_signs, found[5].gpus, found[5].shm.size_bytes) == (None, (), "all", 64 * MiB)
    path = tmp_path / "Jenkinsfile"
    path.write_text(SCRIPTED_RUNS)
    assert main(["lint", str(path), "--fix", *LOADER]) == 1
    after = path.read_text()
    assert ".withRun('--shm-size=1536m --gpus all', 'python train.py')" in after
    assert ".run('--shm-size=1536m')" in after
    assert ".inside(gpuArgs)" in after  # unchanged
    err = capsys.readouterr().err
    assert "Jenkinsfile:7: not written: its args are a Groovy value, not a string in the file" in err


def test_a_jenkinsfile_groovy_would_not_compile_is_refused_in_one_line(tmp_path, capsys):
    """A string or a comment never closed: Jenkins compiles none of the file (`unexpected char: 0xFFFF`), and the
    agent's args or a `sh` step's docker run cannot be told from what follows: exit 2, naming where it opens,
    never a verdict on what Jenkins will not run. Quotes in comments, in other strings and escaped are no opening."""
    read = JENKINSFILE.replace(
        "    stages {\n",
        "    // don't judge what a comment says: 'x\n    /* nor a block's \" */\n    stages {\n",
    ).replace("python train.py' } }", "python train.py \\'$X\\' --url=http://a/b' } }\n        sh \"\"\"echo '''\"\"\"")
    path = tmp_path / "Jenkinsfile"
    for text, line, said in [
        (JENKINSFILE.replace("sh 'docker run", "sh '''\ndocker run"), 9, "a ''' string is not closed"),
        (read.replace("echo '''\"\"\"", "echo '''"), 12, 'a """ string is not closed'),
        (read.replace("image('pytorch/pytorch')", "image('pytorch)"), 16, "a ' string is not closed on its line"),
        (read.replace("/* nor", "/ * nor"), 9, "a ' string is not closed on its line"),
        (read.replace(" */\n", "\n"), 9, "a /* comment is not closed"),
    ]:
        path.write_text(text)
        assert main(["lint", str(path), *LOADER]) == 2
        err = capsys.readouterr().err
        assert err == f"shmdoctor: error: {path}:{line}: {said}: Groovy would not compile this Jenkinsfile\n"
    path.write_text(read)
    assert main(["lint", str(path), *LOADER, "--format", "json"]) == 1  # the same, closed: judged
    assert len(json.loads(capsys.readouterr().out)["reports"]) == 4


def test_a_folder_run_reads_a_jenkinsfile_by_each_name_jenkins_users_give_it(tmp_path, capsys):
    """Jenkinsfile, Jenkinsfile.gpu, pr.gpu.Jenkinsfile (NVIDIA-Merlin/Transformers4Rec's ci/), nightly.jenkinsfile:
    each a pipeline in a folder run, as when named; a README about Jenkinsfiles is not one."""
    names = ["Jenkinsfile", "Jenkinsfile.gpu", "pr.gpu.Jenkinsfile", "nightly.jenkinsfile"]
    for name in names:
        (tmp_path / "ci").mkdir(exist_ok=True)
        (tmp_path / "ci" / name).write_text(JENKINSFILE)
    (tmp_path / "ci" / "Jenkinsfile.md").write_text("# how our Jenkinsfiles run docker\n")
    assert main(["lint", "--format", "json", str(tmp_path)]) == 0
    files = sorted({r["target"]["file"].rsplit("/", 1)[1] for r in json.loads(capsys.readouterr().out)["reports"]})
    assert files == sorted(names)
