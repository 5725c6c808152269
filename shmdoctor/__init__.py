"""shmdoctor: will a PyTorch DataLoader fit in this container's /dev/shm? Facts, verdict, and the exact fix.

The names below load when first used: `python -m shmdoctor` starts by importing this package, and its first line
of its own (__main__.py, which makes a signal at start-up quiet) must come at once.
"""

from __future__ import annotations

import importlib

__all__ = ["preflight", "InsufficientSharedMemoryError", "ShmDoctorError", "UsageError", "ProbeError", "Report"]
_WHERE = {
    "preflight": "api",
    "InsufficientSharedMemoryError": "errors",
    "ShmDoctorError": "errors",
    "UsageError": "errors",
    "ProbeError": "errors",
    "Report": "model",
}


def __getattr__(name: str) -> object:
    if name not in _WHERE:
        raise AttributeError(f"module 'shmdoctor' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)


def __dir__() -> list[str]:
    return sorted(__all__)
