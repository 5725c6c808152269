"""Datasets that fail inside a DataLoader worker the way a short /dev/shm or the OOM killer makes them fail, for
`shmdoctor bench --dataset` tests. In the main process (where shmdoctor measures a sample) they behave."""

from __future__ import annotations

import os
import signal

import torch
from torch.utils.data import get_worker_info


class _Fault(torch.utils.data.Dataset):
    def __init__(self, act):
        self.act, self.sample = act, torch.ones(1024)

    def __len__(self) -> int:
        return 64

    def __getitem__(self, idx: int) -> torch.Tensor:
        if get_worker_info() is not None:
            self.act()
        return self.sample


def _bus_error() -> None:  # what a worker on an old PyTorch gets when ftruncate'd shm runs out
    os.kill(os.getpid(), signal.SIGBUS)


def _kill_the_run() -> None:  # the OOM killer picking the training process (the child bench runs)
    os.kill(os.getppid(), signal.SIGKILL)


def _enospc() -> None:
    raise RuntimeError("unable to allocate shared memory(shm) for file </torch_1_2_3>: No space left on device (28)")


bus_error = _Fault(_bus_error)
kill_the_run = _Fault(_kill_the_run)
enospc = _Fault(_enospc)


class _Hoard(torch.utils.data.Dataset):
    """6 MiB a sample, each a new tensor kept for good, as a dataset caching what it decodes keeps it: memory grows
    by a batch's worth with every batch until a memory limit kills the run, whatever torch itself holds."""

    def __init__(self):
        self.kept: list[torch.Tensor] = []

    def __len__(self) -> int:
        return 1000

    def __getitem__(self, idx: int) -> torch.Tensor:
        self.kept.append(torch.ones(6 * 2**20, dtype=torch.uint8))
        return self.kept[-1]


hoard = _Hoard()
