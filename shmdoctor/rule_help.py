"""Each rule of the catalogue in words, for those who read about it away from a report: code scanning (SARIF's rule
descriptors) and the documentation. `description` says when it fires and what fails; `fix` what its fixes do (the
report gives them with the numbers). tests/unit/test_rule_help.py proves the table total over rules.catalogue()."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RuleHelp:
    description: str
    fix: str


HELP: dict[str, RuleHelp] = {
    "probe-incomplete": RuleHelp(
        "A fact could not be read (a size the file cannot tell, such as a named volume at /dev/shm; an unset "
        "variable; a file that cannot be opened): the verdict may miss something, so it is never OK. The host's "
        "/dev/shm (ipc: host, hostIPC, a bind of it) is unsized only against a need: without a loader or consumer "
        "given, ipc-host says it and nothing is missed.",
        "Make the fact readable: give the size in the definition, set the variable, or run shmdoctor where it can "
        "read the fact (root for another user's processes).",
    ),
    "bad-label": RuleHelp(
        "The target's own shmdoctor.loader label or annotation is not a loader (an unknown key, a number past its "
        "bound): that target is judged without a loader, the others as usual. Or a container's shmdoctor.ignore label "
        "(audit, exporter) names a rule that does not exist: it ignores nothing, and the other containers are judged "
        "as usual (in a file lint reads, such a label or comment is that file's error, exit 2).",
        "Correct the label: comma-separated key=value pairs, e.g. "
        "shmdoctor.loader=batch_size=100,num_workers=4,sample_bytes=1MiB; shmdoctor.ignore takes rule IDs, "
        "comma-separated.",
    ),
    "no-shm": RuleHelp(
        "There is no /dev/shm (--ipc=none): DataLoader workers cannot hand over batches and fail with "
        "FileNotFoundError.",
        "Run with a private /dev/shm sized for the loader (--ipc=private --shm-size=SIZE), or load in the training "
        "process (num_workers=0).",
    ),
    "shm-read-only": RuleHelp(
        "/dev/shm is mounted read-only (--tmpfs /dev/shm:ro, read_only: true, readOnly: true): workers cannot create "
        "segments and fail with 'Read-only file system (30)', whatever its size.",
        "Mount /dev/shm read-write, or load in the training process (num_workers=0).",
    ),
    "shm-too-small": RuleHelp(
        "The loader (and the other consumers given: NCCL, vLLM, Ray, Triton) needs more /dev/shm than is free: "
        "workers fail with 'unable to allocate shared memory' or a bus error. The need is (prefetch_factor x "
        "num_workers + 1) batches per rank, without pin_memory.",
        "Give /dev/shm the size the report names, in the target's own form (--shm-size, compose shm_size, a "
        "memory-backed emptyDir with sizeLimit), with the memory limit that holds it; or the loader settings that "
        "fit today.",
    ),
    "memory-limit": RuleHelp(
        "The memory limit, less what is in use and about 256 MiB per rank for the training process, cannot hold the "
        "need: /dev/shm pages are charged to it, so the container is OOM-killed (exit 137) with no Python error.",
        "Raise the memory limit to what the report names, or use the loader settings that fit today.",
    ),
    "thin-headroom": RuleHelp(
        "The need takes more than 80% of what is available (1/1.25, the margin every fix keeps): no room for a "
        "validation loader or a second rank.",
        "Give /dev/shm (or the memory limit) the size the report names, which keeps a quarter spare.",
    ),
    "default-shm": RuleHelp(
        "No loader was given and /dev/shm is the engine's 64 MiB default (Podman's 62.5 MiB); for lint and audit "
        "only where the workload looks like a training or inference job (an ML image, a torch / ray / vllm "
        "command, GPUs). An inference server's command is read first: vLLM's and SGLang's --tensor-parallel-size "
        "(their default 1) and TGI's --num-shard give their need (broadcast rings, NCCL across the ranks), judged "
        "as any other; this finding is left for what the file does not tell (Triton's python-backend instances, a "
        "size in a variable), and says which.",
        "Give shmdoctor the loader (--batch-size, --num-workers, --sample-bytes, or a shmdoctor.loader label), or "
        "the server's size it names, for the size it needs, then size /dev/shm to it.",
    ),
    "platform-ignores-shm-size": RuleHelp(
        "The definition asks for a /dev/shm size its platform ignores (Fargate and linuxParameters."
        "sharedMemorySize): the container gets the platform's own.",
        "Move the job to a platform that sizes /dev/shm (ECS on EC2, Batch on EC2) with the size it asks for.",
    ),
    "remove-ipc": RuleHelp(
        "On a bare host, systemd-logind's RemoveIPC=yes (systemd's default) applies to this user: its /dev/shm "
        "files go at its last logout, and a job still running fails ('could not unlink the shared memory file').",
        "Set RemoveIPC=no in a logind drop-in (root), or enable lingering for the user (loginctl enable-linger).",
    ),
    "shm-over-memory": RuleHelp(
        "No loader was given (or only consumers that take none, such as a one-GPU server), and /dev/shm is larger "
        "than the memory limit leaves for it: filling it is an OOM kill "
        "(exit 137), not 'No space left'; for lint and audit only where the workload looks like a training or "
        "inference job.",
        "Raise the memory limit to hold /dev/shm beside the processes' own memory, or give shmdoctor the loader to "
        "judge the real need.",
    ),
    "nofile-low": RuleHelp(
        "ulimit -n is below one descriptor per shared tensor in flight plus the process's own: expect 'received 0 "
        "items of ancdata' or 'Too many open files'.",
        "Raise the descriptor limit (--ulimit=nofile=N), or use torch.multiprocessing.set_sharing_strategy("
        "'file_system') in the training script.",
    ),
    "oom-killed": RuleHelp(
        "audit --all: the container was OOM-killed (State.OOMKilled, exit 137); /dev/shm pages count against its "
        "memory limit.",
        "Raise the memory limit to hold the loader's /dev/shm beside the training process (give the loader for the "
        "size).",
    ),
    "ipc-host": RuleHelp(
        "The container shares the host's IPC namespace and /dev/shm (--ipc=host, hostIPC): it works, with a caveat "
        "on shared hosts.",
        "Prefer a private /dev/shm sized for the loader on shared hosts.",
    ),
    "swarm-ignores-shm-size": RuleHelp(
        "lint: a compose file meant for docker stack deploy, which ignores shm_size and ipc (moby#26714): the "
        "service gets the engine's default 64 MiB /dev/shm.",
        "Mount a tmpfs volume of the size needed at /dev/shm (type: tmpfs, tmpfs.size), or bind the host's.",
    ),
    "shm-on-disk": RuleHelp(
        "lint: a disk-backed emptyDir is mounted at /dev/shm: shared batches go through the node's disk and count "
        "as ephemeral storage (the pod is evicted past sizeLimit).",
        "Make the emptyDir memory-backed (medium: Memory) with a sizeLimit for the loader.",
    ),
    "shm-full": RuleHelp(
        "Less than 5% of /dev/shm is free before the loader starts: segments of killed loaders stay until removed.",
        "See what no process holds with shmdoctor clean, and free it with shmdoctor clean --yes.",
    ),
    "nccl-shm-fallback": RuleHelp(
        "NCCL between local GPUs was taken to use P2P (--nccl auto); were it to fall back to its SHM transport "
        "(consumer GPUs, across sockets, NCCL_P2P_DISABLE), /dev/shm could not hold it: 'unhandled system error'.",
        "Give /dev/shm the size with the fallback, or say --nccl shm or --nccl p2p when the transport is known.",
    ),
    "ray-object-store-fallback": RuleHelp(
        "Ray's object store does not fit /dev/shm: Ray puts it in /tmp and every object goes through the disk.",
        "Give /dev/shm room for the store, or cap it at what fits (ray.init(object_store_memory=N)).",
    ),
    "bench-shm-exhausted": RuleHelp(
        "bench: configs ran out of shared memory.",
        "The fixes the rules give its most demanding config: never a smaller /dev/shm than the one that failed; where "
        "the formula says that config fits with room, the report says to look beyond /dev/shm too.",
    ),
    "bench-out-of-memory": RuleHelp(
        "bench: configs were killed for memory where no memory limit counts their /dev/shm pages (or had no "
        "workers): memory ran out, not /dev/shm.",
        "Fewer workers or a smaller batch: /dev/shm is not what ran out.",
    ),
    "bench-error": RuleHelp(
        "bench: configs failed for another reason (the report quotes the line that says why).",
        "Read the error the report quotes: it is not a shared memory failure.",
    ),
}
