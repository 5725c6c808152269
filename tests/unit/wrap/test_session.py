"""run's job: which creators of the segments that appear while the child runs are the child's own, told as each
segment is created (real processes, real inotify on a temporary directory)."""

import os
import subprocess
import sys
import time

from shmdoctor.shm.sampling import Sampler
from shmdoctor.wrap.session import _Sampling

# The child forks a worker that creates its segment and exits at once; the child tells its pid once it exited (not
# reaped: a zombie, as a DataLoader's dead worker is until its loader joins it) and reaps it when its stdin closes.
CHILD = """
import os, sys
worker = os.fork()
if worker == 0:
    open(os.path.join(sys.argv[1], f"torch_{os.getpid()}_1_0"), "w").close()
    os._exit(0)
os.waitid(os.P_PID, worker, os.WEXITED | os.WNOWAIT)
print(worker, flush=True)
sys.stdin.read()
os.waitpid(worker, 0)
"""


def test_a_segments_creator_joins_the_job_when_the_child_is_its_ancestor(tmp_path):
    """Sampled once an hour: only the creation events can tell the worker; the test's own segment (the child's
    parent made it), a pid that cannot exist and a hostile name join nothing."""
    sampling = _Sampling(Sampler(str(tmp_path)), interval=3600, track=True)
    assert sampling.creations is not None and not sampling.scan
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        sampling.start(child.pid)
        worker = int(child.stdout.readline())
        for name in (f"torch_{os.getpid()}_2_0", "torch_99999999_3_0", "torch_1_\udcff\n_0"):
            (tmp_path / name).touch()
        sampling.finish()  # what was created before the stop is taken
    finally:
        child.communicate("", timeout=60)
    assert sampling.job == {child.pid, worker}
    assert child.returncode == 0 and not any(t.is_alive() for t in sampling.threads)


# The worker is reaped as soon as it exits, as a DataLoader's refused worker is within milliseconds: only a creation
# taken while the worker lives ties it to the child.
REAPED = """
import os, sys, time
worker = os.fork()
if worker == 0:
    open(os.path.join(sys.argv[1], f"torch_{os.getpid()}_1_0"), "w").close()
    time.sleep(0.5)
    os._exit(0)
os.waitpid(worker, 0)
print(worker, flush=True)
sys.stdin.read()
"""


class SlowSampler(Sampler):
    """A sample that takes 3 s (a holder scan of a loaded machine's /proc), every time."""

    def sample(self, t):
        time.sleep(3)
        return super().sample(t)


def test_a_creation_is_taken_while_a_sample_is_being_taken(tmp_path):
    """The sampler busy in a slow sample when the worker creates its segment, lives 0.5 s and is reaped: the creation
    is taken on a thread of its own, while the worker lives (taken after the sample, it would name a pid gone)."""
    sampling = _Sampling(SlowSampler(str(tmp_path)), interval=3600, track=True)
    child = subprocess.Popen(
        [sys.executable, "-c", REAPED, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        sampling.start(child.pid)
        worker = int(child.stdout.readline())
        sampling.finish()
    finally:
        child.communicate("", timeout=60)
    assert sampling.job == {child.pid, worker}


def test_without_a_watch_the_childs_descendants_are_scanned(tmp_path):
    """Nothing watched (no /dev/shm here, or no inotify): the child's descendants, scanned at the first sample."""
    sampling = _Sampling(None, interval=3600, track=True)
    assert sampling.creations is None and sampling.scan
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        worker = int(child.stdout.readline())  # a zombie, its parent's child still
        sampling.start(child.pid)
        sampling.finish()
    finally:
        child.communicate("", timeout=60)
    assert sampling.job == {child.pid, worker}
