"""clean recognises the segment names PyTorch itself makes (a real file_system segment from ATen)."""

from __future__ import annotations

import subprocess
import sys

from shmdoctor.shm.segments import creator_pid, recognise


def test_recognise_pytorchs_own_names(torch_module):
    # A real file_system segment, named by ATen: torch_<pid>_<random>_<counter>.
    code = """
import os, torch, torch.multiprocessing as mp
mp.set_sharing_strategy("file_system")
before = set(os.listdir("/dev/shm"))
t = torch.ones(4096).share_memory_()
print(os.getpid(), *sorted(n for n in set(os.listdir("/dev/shm")) - before if n.startswith("torch_")))
"""
    pid, *names = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert names, "torch made no named segment"
    assert all(recognise(n) == "PyTorch" and creator_pid(n) == int(pid) for n in names)
