"""clean recognises the segment names PyTorch itself makes (a real file_system segment from ATen)."""

from __future__ import annotations

import subprocess
import sys

from shmdoctor.shm.segments import creator_pid, recognise


def test_recognise_pytorchs_own_names(torch_module):
    # A real file_system segment, named by ATen: torch_<pid>_<random>_<counter>. Its name is read from what this
    # process maps, not from a listing of /dev/shm, where any other torch process (another test, a helper) may add
    # its own segments meanwhile.
    code = """
import os, torch, torch.multiprocessing as mp
mp.set_sharing_strategy("file_system")
t = torch.ones(4096).share_memory_()
mapped = {line.split(maxsplit=5)[5].strip() for line in open("/proc/self/maps") if " /dev/shm/" in line}
print(os.getpid(), *sorted(path.removeprefix("/dev/shm/") for path in mapped))
"""
    pid, *names = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert names, "torch made no named segment"
    assert all(recognise(n) == "PyTorch" and creator_pid(n) == int(pid) for n in names)
