"""A Fix said in the target's own form: docker / podman flags, a compose or Swarm service, a pod spec, a Quadlet unit,
an ECS task or Batch job definition, an Azure ML job, the machine's shell. One renderer a form (FORMS, a test proves it
total); each gives the statements to paste, one a line, in flow style where the language nests, so that a table can
join them on one line and a block can show them as they are. `lint --fix` writes the same values (the Fix's numbers),
never these strings."""

from __future__ import annotations

import re
from typing import Callable

from ..model import SHM, Facts, Fix, Form
from ..sizes import MiB, docker_size, k8s_quantity

Statements = tuple[str, ...]


def form_of(facts: Facts) -> Form:
    """Where the target is defined, so where its fix is written."""
    if facts.form is not None:
        return facts.form
    target, runtime = facts.target, facts.runtime
    if target.kind == "local" and runtime == "none":
        return "shell"
    if runtime in ("ecs", "batch", "azureml"):
        return runtime
    if target.kind == "service":
        if runtime == "podman":
            return "quadlet"
        return "swarm" if facts.swarm is not None else "compose"
    if target.kind == "workload" or runtime == "kubernetes":
        return "kubernetes"
    return "podman" if runtime == "podman" else "docker"


def _mib(size: int) -> int:
    return -(-size // MiB)


def _tmpfs(facts: Facts) -> bool:
    """A tmpfs mounted at /dev/shm overrides the engine's shm mount: the size goes to the tmpfs itself."""
    return facts.shm.source == "tmpfs"


def _owner(facts: Facts, what: str = "") -> Statements:
    """Where the IPC namespace (and so /dev/shm) is another's, the fix is written there."""
    owner = facts.ipc.owner if facts.ipc.mode == "container" else None
    return (f"# on {what}{owner}, the IPC owner",) if owner else ()


def run_args(fix: Fix, facts: Facts) -> tuple[str, ...]:
    """docker run / podman run flags (also check's and bench's JSON docker_args)."""
    args: tuple[str, ...] = (f"--ipc={fix.ipc}",) if fix.ipc else ()
    if fix.shm_bytes:
        shm = docker_size(fix.shm_bytes)
        args += ("--tmpfs", f"{SHM}:size={shm}") if _tmpfs(facts) else (f"--shm-size={shm}",)
    if fix.memory_bytes:
        args += (f"--memory={docker_size(fix.memory_bytes)}",)
    for name, value in fix.env:
        args += ("-e", f"{name}={value}")
    if fix.nofile:
        args += (f"--ulimit=nofile={fix.nofile}",)
    return args


def _run(engine: str) -> Callable[[Fix, Facts], Statements]:
    def say(fix: Fix, facts: Facts) -> Statements:
        args = run_args(fix, facts)
        return (f"{engine} run {' '.join(args)} ...",) if args else ()

    return say


# The engines whose run command makes a target, by the runtime the probe told: a Quadlet unit's is Podman's too.
ENGINES = {"docker": "docker", "podman": "podman"}


def command(fix: Fix, facts: Facts) -> str | None:
    """The fix as the command line of the engine that runs the target (`podman run --shm-size=... ...` under Podman,
    `docker run ...` under Docker); None where no run command makes the target (compose, which may run on either; a
    pod, a platform's job, the machine itself) or the fix sets nothing such a command takes."""
    engine = ENGINES.get(facts.runtime)
    said = _run(engine)(fix, facts) if engine and fix.sets else ()
    return said[0] if said else None


def _shell(fix: Fix, facts: Facts) -> Statements:
    """The machine itself: the builder's command, else the variables and limits for this shell; a size or an IPC
    namespace is a container's, said as docker's flags."""
    if fix.shell:
        return (fix.shell,)
    out = tuple(f"export {name}={value}" for name, value in fix.env)
    out += (f"ulimit -n {fix.nofile}",) if fix.nofile else ()
    return out or _run("docker")(fix, facts)


def _compose_memory(fix: Fix, deploy: bool) -> Statements:
    """deploy.resources.limits.memory where the file sets it there (and for Swarm, which reads only that)."""
    if not fix.memory_bytes:
        return ()
    memory = docker_size(fix.memory_bytes)
    if deploy:
        return (f'deploy: {{resources: {{limits: {{memory: "{memory}"}}}}}}',)
    return (f'mem_limit: "{memory}"',)


def _compose_common(fix: Fix) -> Statements:
    out = ("environment: {" + ", ".join(f'{n}: "{v}"' for n, v in fix.env) + "}",) if fix.env else ()
    return out + ((f"ulimits: {{nofile: {fix.nofile}}}",) if fix.nofile else ())


def _compose(fix: Fix, facts: Facts) -> Statements:
    out = _owner(facts, "service ")
    if fix.ipc:
        instead = f"  # instead of ipc: {facts.ipc.mode}" if fix.ipc == "private" else ""
        out += (f"ipc: {fix.ipc}{instead}",)
    if fix.shm_bytes:
        shm = docker_size(fix.shm_bytes)
        out += (f'tmpfs: ["{SHM}:size={shm}"]',) if _tmpfs(facts) else (f'shm_size: "{shm}"',)
    return out + _compose_memory(fix, "compose-deploy-memory" in facts.flags) + _compose_common(fix)


def _swarm(fix: Fix, facts: Facts) -> Statements:
    """docker stack ignores shm_size and ipc (moby#26714): mounts it honours instead."""
    out: Statements = ()
    if fix.ipc == "host":
        out += (f"volumes: [{{type: bind, source: {SHM}, target: {SHM}}}]",)
    if fix.shm_bytes:
        tmpfs = f"{{type: tmpfs, target: {SHM}, tmpfs: {{size: {fix.shm_bytes}}}}}"
        out += (f"volumes: [{tmpfs}]",)
    return out + _compose_memory(fix, deploy=True) + _compose_common(fix)


def _kubernetes(fix: Fix, facts: Facts) -> Statements:
    out: Statements = (f"# {facts.operator_fix}",) if facts.operator_fix and fix.shm_bytes else ()
    if fix.ipc:
        out += (f"hostIPC: {str(fix.ipc == 'host').lower()}  # pod spec",)
    if fix.shm_bytes:
        out += (
            f"volumes: [{{name: dshm, emptyDir: {{medium: Memory, sizeLimit: {k8s_quantity(fix.shm_bytes)}}}}}]"
            "  # pod spec",
            f"volumeMounts: [{{name: dshm, mountPath: {SHM}}}]  # the container that runs the loader",
        )
    if fix.memory_bytes:
        out += (f"resources: {{limits: {{memory: {k8s_quantity(fix.memory_bytes)}}}}}  # the same container",)
    elif fix.shm_bytes:  # none is invented: a limit that held only /dev/shm would OOM-kill a process holding a model
        out += ("# its memory limit, where it has one, must hold sizeLimit + what the process itself needs",)
    if fix.env:
        out += ("env: [" + ", ".join(f'{{name: {n}, value: "{v}"}}' for n, v in fix.env) + "]",)
    return out  # no ulimit in a pod spec: the node's runtime sets it


def _quadlet(fix: Fix, facts: Facts) -> Statements:
    pod = facts.ipc.owner if facts.ipc.mode == "container" and str(facts.ipc.owner).endswith(".pod") else None
    out = _owner(facts) if not pod else ()
    out += (f"PodmanArgs=--ipc={fix.ipc}",) if fix.ipc else ()
    if fix.shm_bytes and pod and not _tmpfs(facts):  # a pod's member has the pod's /dev/shm: its .pod sizes it
        shm = docker_size(fix.shm_bytes)
        out += (f"# in {pod}'s [Pod] section (Podman 5.4+; 5.0 to 5.3: PodmanArgs=--shm-size={shm})", f"ShmSize={shm}")
    elif fix.shm_bytes:
        shm = docker_size(fix.shm_bytes)
        out += (f"Tmpfs={SHM}:size={shm}",) if _tmpfs(facts) else (f"ShmSize={shm}",)
    if fix.memory_bytes:
        out += (f"PodmanArgs=--memory={docker_size(fix.memory_bytes)}",)
    out += tuple(f"Environment={n}={v}" for n, v in fix.env)
    return out + ((f"Ulimit=nofile={fix.nofile}",) if fix.nofile else ())


def _linux_parameters(fix: Fix, facts: Facts) -> Statements:
    """An ECS container definition's or a Batch job's containerProperties' keys (sizes in MiB)."""
    if not fix.shm_bytes:
        return ()
    size = _mib(fix.shm_bytes)
    if _tmpfs(facts):
        return (f'"linuxParameters": {{"tmpfs": [{{"containerPath": "{SHM}", "size": {size}}}]}}',)
    return (f'"linuxParameters": {{"sharedMemorySize": {size}}}',)


def _aws_common(fix: Fix) -> Statements:
    out = ('"environment": [' + ", ".join(f'{{"name": "{n}", "value": "{v}"}}' for n, v in fix.env) + "]",)
    nofile = f'"ulimits": [{{"name": "nofile", "softLimit": {fix.nofile}, "hardLimit": {fix.nofile}}}]'
    return (out if fix.env else ()) + ((nofile,) if fix.nofile else ())


def _ecs(fix: Fix, facts: Facts) -> Statements:
    out: Statements = ('"ipcMode": "host"  # the task definition; EC2 only',) if fix.ipc == "host" else ()
    out += _linux_parameters(fix, facts)
    out += (f'"memory": {_mib(fix.memory_bytes)}',) if fix.memory_bytes else ()
    return out + _aws_common(fix)


def _batch(fix: Fix, facts: Facts) -> Statements:
    """A Batch job definition has no ipcMode: the host's /dev/shm cannot be had there."""
    out = _linux_parameters(fix, facts)
    if fix.memory_bytes:
        out += (f'"resourceRequirements": [{{"type": "MEMORY", "value": "{_mib(fix.memory_bytes)}"}}]',)
    return out + _aws_common(fix)


def _azureml(fix: Fix, facts: Facts) -> Statements:
    """An Azure ML job: resources.shm_size; memory comes with the compute's instance type; no host IPC."""
    out: Statements = (f"resources: {{shm_size: {docker_size(fix.shm_bytes)}}}",) if fix.shm_bytes else ()
    if fix.memory_bytes:
        out += (f"# compute: an instance type with more than {docker_size(fix.memory_bytes)} of memory",)
    if fix.env:
        out += ("environment_variables: {" + ", ".join(f'{n}: "{v}"' for n, v in fix.env) + "}",)
    return out


def _flags(fix: Fix, facts: Facts) -> tuple[str, ...]:
    """docker run's flags of a fix, each one argument (--tmpfs's path joined to it), for the forms that take them."""
    return tuple(" ".join(run_args(fix, facts)).replace("--tmpfs ", "--tmpfs=").replace("-e ", "--env=").split())


def _devcontainer(fix: Fix, facts: Facts) -> Statements:
    """devcontainer.json's runArgs: one argument each, as the devcontainers CLI hands them to docker run."""
    flags = _flags(fix, facts)
    return ('"runArgs": [' + ", ".join(f'"{f}"' for f in flags) + "]",) if flags else ()


def _github_actions(fix: Fix, facts: Facts) -> Statements:
    """A job's container (or service) `options`: docker create's flags in one string."""
    flags = _flags(fix, facts)
    return (f"options: {' '.join(flags)}  # the job's container: (or its service)",) if flags else ()


def _gitlab_runner(fix: Fix, facts: Facts) -> Statements:
    """GitLab's .gitlab-ci.yml has no /dev/shm setting: the Docker executor's config.toml does, in bytes."""
    if not fix.shm_bytes:
        return ()
    return ("# the runner's config.toml, not .gitlab-ci.yml", f"[runners.docker] shm_size = {fix.shm_bytes}")


def _jenkins(fix: Fix, facts: Facts) -> Statements:
    """A Jenkins docker agent's args (declarative) or .inside()'s (scripted): docker run's flags in one string."""
    flags = _flags(fix, facts)
    return (f"args '{' '.join(flags)}'  # agent {{ docker {{ ... }} }}, or .inside('...')",) if flags else ()


def _terraform(fix: Fix, facts: Facts) -> Statements:
    """A Terraform resource's arguments, in HCL, by what it creates: an ECS or Batch container's keys inside its
    jsonencode (sizes in MiB), a kubernetes_* pod's blocks, a docker_container's arguments (sizes in MiB)."""
    if facts.runtime in ("ecs", "batch"):
        host = ('ipc_mode = "host"  # the resource\'s argument; EC2 only',) if fix.ipc == "host" else ()
        said = tuple(_hcl_object(s) for s in FORMS[facts.runtime](fix, facts) if not s.startswith('"ipcMode"'))
        return host + said + ("# in the container's definition",) * bool(said)
    if facts.runtime == "kubernetes":
        out: Statements = ("host_ipc = true  # the pod's spec",) if fix.ipc == "host" else ()
        if fix.shm_bytes:
            size = k8s_quantity(fix.shm_bytes)
            out += (
                f'volume {{ name = "dshm" empty_dir {{ medium = "Memory" size_limit = "{size}" }} }}  # the pod spec',
                f'volume_mount {{ name = "dshm" mount_path = "{SHM}" }}  # the container that runs the loader',
            )
        if fix.memory_bytes:
            out += (
                f'resources {{ limits = {{ memory = "{k8s_quantity(fix.memory_bytes)}" }} }}  # the same container',
            )
        return out + tuple(f'env {{ name = "{n}" value = "{v}" }}' for n, v in fix.env)
    out = (f'ipc_mode = "{fix.ipc}"',) if fix.ipc else ()
    if fix.shm_bytes:
        size = docker_size(fix.shm_bytes)
        out += (f'tmpfs = {{ "{SHM}" = "size={size}" }}',) if _tmpfs(facts) else (f"shm_size = {_mib(fix.shm_bytes)}",)
    out += (f"memory = {_mib(fix.memory_bytes)}",) if fix.memory_bytes else ()
    out += (f"env = [{', '.join(f'{chr(34)}{n}={v}{chr(34)}' for n, v in fix.env)}]",) if fix.env else ()
    return out


def _cloudformation(fix: Fix, facts: Facts) -> Statements:
    """A task or job definition's Properties in CloudFormation's words: PascalCase keys, YAML flow style."""
    host = ("IpcMode: host  # the task definition's Properties; EC2 only",) if fix.ipc == "host" else ()
    host = host if facts.runtime == "ecs" else ()  # a Batch job has no IPC mode: no host /dev/shm there
    own = _ecs if facts.runtime == "ecs" else _batch
    said = tuple(_pascal(s) for s in own(fix, facts) if not s.startswith('"ipcMode"'))
    where = "ContainerDefinitions' item" if facts.runtime == "ecs" else "ContainerProperties (or a node's Container)"
    return host + said + (f"# in the container's {where}",) * bool(said)


def _pascal(statement: str) -> str:
    """'"linuxParameters": {"sharedMemorySize": 1536}' -> 'LinuxParameters: {SharedMemorySize: 1536}'."""
    code, _, comment = statement.partition("  # ")
    code = re.sub(r'"([a-z])([A-Za-z0-9]*)": ', lambda m: f"{m.group(1).upper()}{m.group(2)}: ", code)
    return code + (f"  # {comment}" if comment else "")


def _nomad(fix: Fix, facts: Facts) -> Statements:
    """A Nomad docker task: shm_size in bytes and ipc_mode in its config block, memory in MB in its resources."""
    out: Statements = (f'ipc_mode = "{fix.ipc}"  # the task\'s config block',) if fix.ipc else ()
    out += (f"shm_size = {fix.shm_bytes}  # the task's config block, in bytes",) if fix.shm_bytes else ()
    out += (f"memory = {_mib(fix.memory_bytes)}  # the task's resources block, in MB",) if fix.memory_bytes else ()
    return out + ((f"env {{ {' '.join(f'{n} = {chr(34)}{v}{chr(34)}' for n, v in fix.env)} }}",) if fix.env else ())


def _kfp(fix: Fix, facts: Facts) -> Statements:
    """A Kubeflow pipeline's task, in the pipeline's Python (kfp and kfp-kubernetes), then the compiled key: the
    compiled YAML is regenerated from it. KFP has no host IPC for a task."""
    out: Statements = ()
    if fix.shm_bytes:
        size = k8s_quantity(fix.shm_bytes)
        mounted = facts.shm.source.startswith("k8s-emptydir")  # its own call mounts one: changed, not another
        said = "the call that mounts it, changed" if mounted else "from kfp import kubernetes"
        out += (
            f'kubernetes.empty_dir_mount(task, volume_name="dshm", mount_path="{SHM}", medium="Memory", '
            f'size_limit="{size}")  # {said}',
            f"# compiled: emptyDirMounts: [{{volumeName: dshm, mountPath: {SHM}, medium: Memory, sizeLimit: {size}}}]"
            " under platforms.kubernetes.deploymentSpec.executors.<its executor>",
        )
    if fix.memory_bytes:
        out += (f'task.set_memory_limit("{k8s_quantity(fix.memory_bytes)}")',)
    return out + tuple(f'task.set_env_variable("{n}", "{v}")' for n, v in fix.env)


def _vertex(fix: Fix, facts: Facts) -> Statements:
    """A Vertex AI Model's serving container: sharedMemorySizeMb (MB, an int64 as a string), as gcloud and the Python
    SDK say it. A CustomJob has no /dev/shm setting (the fix's summary says what else can be done); its memory comes
    with machineSpec.machineType."""
    out: Statements = ()
    if fix.shm_bytes and facts.shm.source != "unknown":
        size = _mib(fix.shm_bytes)
        out += (
            f'containerSpec: {{sharedMemorySizeMb: "{size}"}}  # the Model\'s; gcloud ai models upload '
            f"--container-shared-memory-size-mb={size}; Model.upload(serving_container_shared_memory_size_mb={size})",
        )
    if fix.memory_bytes:
        out += (f"# machineSpec.machineType: one with more than {docker_size(fix.memory_bytes)} of memory",)
    if fix.env:
        out += ("containerSpec: {env: [" + ", ".join(f'{{name: {n}, value: "{v}"}}' for n, v in fix.env) + "]}",)
    return out


def _hcl_object(statement: str) -> str:
    """'"key": {"a": 1}' (JSON, as the ECS form says it) -> 'key = { a = 1 }' (an HCL object), comments kept."""
    code, _, comment = statement.partition("  # ")
    code = re.sub(r'"([A-Za-z_][A-Za-z0-9_]*)": ', r"\1 = ", code)
    code = re.sub(r"\{(?=\S)", "{ ", re.sub(r"(?<=\S)\}", " }", code)).replace(", ", ", ")
    return code + (f"  # {comment}" if comment else "")


FORMS: dict[Form, Callable[[Fix, Facts], Statements]] = {
    "shell": _shell,
    "docker": _run("docker"),
    "podman": _run("podman"),
    "compose": _compose,
    "swarm": _swarm,
    "kubernetes": _kubernetes,
    "quadlet": _quadlet,
    "ecs": _ecs,
    "batch": _batch,
    "azureml": _azureml,
    "devcontainer": _devcontainer,
    "github-actions": _github_actions,
    "gitlab-runner": _gitlab_runner,
    "jenkins": _jenkins,
    "terraform": _terraform,
    "cloudformation": _cloudformation,
    "nomad": _nomad,
    "kfp": _kfp,
    "vertex": _vertex,
}


def statements(fix: Fix, facts: Facts, form: Form | None = None) -> Statements:
    """What to write for this fix where the target is defined (or in `form`); () where it sets nothing the form can
    say (a setting that form does not have) or nothing at all (then its summary is the fix)."""
    said = FORMS[form or form_of(facts)](fix, facts) if fix.sets else ()
    if said:
        return said
    if fix.shell:
        return (fix.shell,)
    if fix.loader:
        return ("DataLoader(" + ", ".join(f"{k}={v}" for k, v in fix.loader.items()) + ", ...)",)
    return ()


def applies(fix: Fix, facts: Facts, form: Form | None = None) -> bool:
    """False for a fix whose settings this form cannot say (the host's IPC on Azure ML or Batch): it is left out."""
    return not fix.sets or bool(statements(fix, facts, form))


def block(fix: Fix, facts: Facts, form: Form | None = None) -> str | None:
    """The statements as a block to paste, None where there are none."""
    return "\n".join(statements(fix, facts, form)) or None


def line(fix: Fix, facts: Facts, form: Form | None = None) -> str:
    """The statements on one line (comments dropped), for a table; the summary where there are none."""
    said = [s.split("  # ")[0] for s in statements(fix, facts, form) if not s.startswith("#")]
    return "; ".join(said) or fix.summary
