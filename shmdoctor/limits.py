"""Bounds on every number and every input shmdoctor reads: past one, a one-line error, never a hang or a traceback.

Each bound is far above what a real machine or a real file has, so that only a mistake or an attack meets it. The
docs/limits.md lists them; tests/integration/process/test_bad_inputs.py crosses each one.
"""

from __future__ import annotations

import math

from .errors import UsageError

# Numbers of a loader and of the targets it is judged on.
MAX_BYTES = 2**50  # 1 PiB: any size: more memory than any machine has
MAX_WORKERS = 4096  # DataLoader workers: more than the hardware threads of the largest machines
MAX_PREFETCH = 4096  # batches each worker loads ahead
MAX_RANKS = 4096  # loaders in one container
MAX_BATCH = 2**32  # samples per batch

# Inputs: files, stdin, engine answers.
MAX_YAML_BYTES = 8 * 2**20  # 25,000 compose services: 17-37 s, 430 MiB here (benchmarks/limits_bench.py)
MAX_JSON_BYTES = 32 * 2**20  # `kubectl get pods -o json` of 18,000 pods: 8-11 s, 300 MiB
MAX_HCL_BYTES = 2**20  # a Terraform or Nomad file: the largest modules' main.tf are ~100 KiB
MAX_HCL_TOKENS = 60_000  # HCL's parser (lark, pure Python) takes ~50 µs a token here: 60,000 in 3 s
MAX_SCRIPT_BYTES = 8 * 2**20  # shell text read in one file once a CI file's anchors and variables are put in
MAX_DEPTH = 64  # nesting of mappings and lists (a Kubernetes object nests ~15 deep)
MAX_NODES = 4_000_000  # values in one input once YAML aliases and merge keys are expanded (an alias bomb)
MAX_DIGITS = 64  # digits of one number in a file: sizes fit in 20
MAX_INTERPOLATION_DEPTH = 32  # ${A:-${B:-...}} nested in one compose value
MAX_IPC_CHAIN = 64  # compose services joined by `ipc: service:NAME`, one after the other
ENGINE_TIMEOUT = 30.0  # seconds for all of one engine's answers (audit --timeout)
MAX_TIMEOUT = 3600.0  # seconds: --timeout, watch's --interval and --holders-every
MIN_INTERVAL = 0.01  # seconds between samples of run and watch: 1e-9 was a busy loop (a sample costs ~0.1 ms)
MAX_DURATION = 366 * 86400.0  # seconds: watch --duration, a year


def bounded(name: str, value: object, least: int, most: int) -> int:
    """An integer of the loader (batch_size, num_workers, ...) in [least, most], or a one-line UsageError."""
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise UsageError(f"{name} must be an integer of at least {least}, got {shown(value)}")
    if value > most:
        raise UsageError(f"{name} must be at most {most} (more than any machine runs), got {shown(value)}")
    return value


def clip(text: str, most: int) -> str:
    """text cut to at most `most` characters, an ellipsis marking the cut."""
    return text if len(text) <= most else text[: most - 1] + "…"


def shown(value: object) -> str:
    """A value for an error message, never 400 digits long: its repr, or its start and its length."""
    text = repr(value)
    length = len(value) if isinstance(value, str) else len(str(value))
    return text if len(text) <= 100 else f"{text[:60]}... ({length} characters)"


def seconds(name: str, value: float | None, most: float, *, never: bool = False, least: float = 0) -> float | None:
    """A duration option: a finite number of seconds greater than zero (at least `least`, where a shorter one is a
    busy loop) and at most `most` (1e10 s is 300 years); 0 too where it means never (`never`)."""
    if value is None or (never and value == 0):
        return value
    if math.isfinite(value) and (value >= least if least else value > 0) and value <= most:
        return value
    zero = "0 (never) or " if never else ""
    low = f"at least {least:g}" if least else "greater than zero"
    raise UsageError(f"{name} must be {zero}a number of seconds {low} and at most {most:.0f}, got {value!r}")
