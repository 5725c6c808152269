"""Whether a target looks like a training or inference job, from what its definition says: its image and command.

Without a loader to judge against, lint and audit warn about an engine's default /dev/shm only where the workload
looks like one (a GPU asked for, an ML image, a torch / ray / vllm command): a web server or a database with 64 MiB is
fine, and 56 warnings on a self-hosting compose file hide the one that matters. With a loader, everything is judged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ..limits import MAX_DIGITS, shown
from ..model import Flag, ServerName, Serving

# Words of an image's name (split at / : - _ .) that name an ML framework, server or base image.
ML_IMAGE_WORDS = frozenset(
    {
        "pytorch",
        "torch",
        "torchserve",
        "tensorflow",
        "jax",
        "vllm",
        "sglang",
        "tritonserver",
        "triton",
        "ray",
        "deepspeed",
        "megatron",
        "nemo",
        "huggingface",
        "huggingfaceserver",
        "transformers",
        "text-generation-inference",
        "tgi",
        "cuda",
        "mxnet",
        "paddle",
        "paddlepaddle",
        "lightning",
        "ultralytics",
        "detectron2",
        "mmdetection",
        "onnxruntime",
        "ollama",
        "llama",
        "diffusers",
    }
)
# A command or module that trains or serves a model.
ML_COMMAND = (  # a pattern, compiled (and cached by re) at its first use: check never uses it
    r"(?<![\w.-])(torchrun|torch\.distributed\.run|deepspeed|accelerate|vllm|sglang|tritonserver|ray|"
    r"text-generation-launcher|torchserve|horovodrun|lightning|huggingfaceserver|"
    r"(?:[\w-]*[_-]|pre)?train(?:ing)?(?:[_-][\w-]*)?\.py)(?![\w-])"
)


# A command that loads nothing itself, whatever its image: an MPI launcher starts the ranks elsewhere (an MPIJob's
# launcher pod), a one-shot fetch exits (ollama pull, a hub download), TensorBoard shows logs, nvidia-smi lists GPUs.
# Shell wrappers (sh -c, bash -lc) are looked into.
_SHELL = r"^(?:\S*/)?(?:ba|z|da)?sh\s+(?:-\w+\s+)*['\"]?"
_ONE_SHOT = (
    r"(?:\S*/)?(?:mpirun|mpiexec|nvidia-smi|ollama\s+(?:pull|push|rm|cp|list|show|create)|"
    r"(?:huggingface-cli|hf)\s+(?:download|login)|tensorboard|python3?\s+-m\s+tensorboard\.main)(?![\w-])"
)


def loads_nothing(command: str) -> bool:
    """The command launches ranks elsewhere, fetches and exits, or shows logs: no DataLoader or server of its own."""
    text = re.sub(_SHELL, "", command.strip(), count=1)
    return bool(re.match(_ONE_SHOT, text)) and not re.search(r"(?<![\w-])serve(?![\w-])", text)


def _image_words(image: str) -> set[str]:
    """'nvcr.io/nvidia/pytorch:24.01-py3' -> {..., 'pytorch', ...}; a version glued on is dropped (cuda12: cuda)."""
    words = set(re.split(r"[/:_.@]", image.lower()))
    words |= {part for word in words for part in word.split("-")}
    return words | {re.sub(r"\d+$", "", word) for word in words}


def _words(command: object) -> Iterable[str]:
    if isinstance(command, (list, tuple)):
        for part in command:
            yield from _words(part)
    elif isinstance(command, (str, int, float)):
        yield str(command)


def ml_signs(image: object, *command: object) -> tuple[str, ...]:
    """Why the workload looks like a training or inference job, in words; () when nothing says so. `command`: its
    entrypoint, command and arguments, each a string or a list (as files and inspect write them)."""
    return _signs(image if isinstance(image, str) else None, " ".join(_words(command)))


def idle(image: object, *command: object) -> frozenset[Flag]:
    """{'loads-nothing'} where the command loads nothing itself (ml_signs' launchers, fetches, log viewers): the GPUs
    it reserves then make no training job of it either."""
    text = " ".join(_words(command))
    return frozenset(("loads-nothing",)) if _idle(image if isinstance(image, str) else None, text) else frozenset()


def _idle(image: str | None, text: str) -> bool:
    words = _image_words(image) if image is not None else set()
    return loads_nothing(("ollama " if "ollama" in words else "") + text) or loads_nothing(text)  # image's entrypoint


@lru_cache(maxsize=256)  # a fleet's containers share a few images and commands: an audit of 200 reads each once
def _signs(image: str | None, text: str) -> tuple[str, ...]:
    if _idle(image, text):
        return ()
    words = _image_words(image) if image is not None else set()
    signs = []
    if ML_IMAGE_WORDS & words:
        signs.append(f"image {image}")
    match = re.search(ML_COMMAND, text)
    if match:
        signs.append(f"command {match.group(1)}")
    return tuple(signs)


# Each inference server: what in a command names it, its image's word, the flags that split a model over GPUs
# (vLLM also takes underscores; argparse takes SGLang's --tp for --tp-size) and the variable that does (TGI's launcher
# reads NUM_SHARD where no flag is given; without either, a shard a GPU it sees).
_SERVERS: tuple[tuple[ServerName, str, str, str, str], ...] = (
    ("sglang", r"sglang(?:\.launch_server|\s+serve)", "sglang", r"--tp-size|--tp|--tensor-parallel-size", ""),
    ("vllm", r"vllm(?:\.entrypoints|\s+serve)", "vllm", r"--tensor[-_]parallel[-_]size|-tp", ""),
    ("tgi", r"text-generation-launcher", "text-generation-inference", r"--num-shard", "NUM_SHARD"),
    ("triton", r"tritonserver", "tritonserver", "", ""),
)
_DEFAULT_TP = {"vllm": "vLLM's default", "sglang": "SGLang's default"}


def serving(image: object, entrypoint: object, *args: object, env: object = None) -> Serving | None:
    """The inference server a container runs: its entrypoint and arguments name it, or its image does where the
    entrypoint is the image's own (not overridden); with the tensor parallel size its arguments (or environment:
    env as env_pairs takes it) write. None for anything else: a Ray worker script in a vLLM image is no server."""
    text = " ".join(_words((entrypoint, *args)))
    name_ = image if isinstance(image, str) else None
    if _idle(name_, text):
        return None
    found = next((s for s in _SERVERS if re.search(rf"(?<![\w-]){s[1]}", text)), None)
    if found is None and not entrypoint and name_ is not None:  # the image's repository is the server's own
        repo = re.split(r"[:@]", name_.lower().rsplit("/", 1)[-1])[0]
        found = next((s for s in _SERVERS if s[2] == repo or s[2] in repo.split("-")), None)
    if found is None:
        return None
    name, _, _, flags, variable = found
    flag = re.search(rf"(?<![\w-])({flags})(?:=|\s+)['\"]?([^\s'\"]*)", text) if flags else None
    if flag is not None:
        size = _count(flag.group(2))
        return Serving(name, size, f"{flag.group(1)} {flag.group(2) if size else shown(flag.group(2))}")
    value = next((str(v) for k, v in env_pairs(env) if variable and k == variable), None)
    if value is not None:  # a variable's value is never printed: its name, and the number where it is one
        return Serving(name, _count(value), variable)
    return Serving(name, 1 if name in _DEFAULT_TP else None, _DEFAULT_TP.get(name, ""))


def _count(value: str) -> int | None:
    """A positive count as written (ASCII digits, as many as a number has), else None (a variable, a word)."""
    return (int(value) or None) if value.isascii() and value.isdigit() and len(value) <= MAX_DIGITS else None


def gpu_count(gpus: str | None) -> int | None:
    """GPUs a definition asks for ('all', a count, or device ids, as Facts.gpus says them) as a count, where a
    count can be told: 'all' and 'some' cannot."""
    if not gpus:
        return None
    if gpus.isdigit():
        return int(gpus) if 0 < int(gpus) <= 4096 else None
    ids = [i for i in gpus.split(",") if i.strip()]
    return len(ids) if ids and gpus not in ("all", "some") and len(ids) <= 4096 else None


def nccl_env(pairs: Iterable[tuple[object, object]]) -> tuple[tuple[str, str], ...]:
    """The NCCL_* variables among (name, value) pairs of a definition or inspect, strings only, at most 64: they
    decide NCCL's transport and buffers. Kept in the facts, never printed."""
    found = {k: v for k, v in pairs if isinstance(k, str) and k.startswith("NCCL_") and isinstance(v, (str, int))}
    return tuple(sorted((k, str(v)) for k, v in found.items()))[:64]


def env_pairs(env: object) -> list[tuple[object, object]]:
    """compose's environment (a mapping, or a list of NAME=value), inspect's Config.Env (NAME=value), or a
    Kubernetes container's env ([{name, value}]) as (name, value) pairs."""
    if isinstance(env, dict):
        return list(env.items())
    if not isinstance(env, list):
        return []
    out: list[tuple[object, object]] = []
    for item in env[:4096]:
        if isinstance(item, str):
            name, _, value = item.partition("=")
            out.append((name, value))
        elif isinstance(item, dict):
            out.append((item.get("name"), item.get("value")))
    return out


# AMD's container toolkit and ROCm name the GPUs a container sees in these; /dev/kfd is ROCm's compute device.
AMD_VISIBLE = ("AMD_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


def amd_gpus(devices: object = (), env: object = None, runtime: object = None) -> str | None:
    """AMD GPUs a definition gives its container, as Facts.gpus says them ('all' or device ids); None where none:
    AMD_VISIBLE_DEVICES (or ROCR_ / HIP_VISIBLE_DEVICES), /dev/kfd among its devices (or AMD's CDI name
    amd.com/gpu=...), or `runtime: amd`. RCCL keeps NCCL's transports: its SHM one is NCCL's term."""
    for name, value in env_pairs(env):
        if name in AMD_VISIBLE and isinstance(value, (str, int)) and str(value).strip() not in ("", "none", "void"):
            return "all" if str(value).strip() == "all" else str(value).strip()
    # Quadlet's AddDevice=-/dev/kfd: the leading '-' makes the device optional
    paths = [(str(d.get("PathOnHost", "")) if isinstance(d, dict) else str(d)).lstrip("-") for d in _items(devices)]
    cdi = next((p.split("=", 1)[1] for p in paths if p.startswith("amd.com/gpu=")), None)
    if cdi is not None:
        return cdi or "all"
    if any(p.split(":")[0].rstrip("/") == "/dev/kfd" for p in paths) or runtime == "amd":
        return "all"
    return None


def _items(value: object) -> list:
    return value[:4096] if isinstance(value, list) else []
