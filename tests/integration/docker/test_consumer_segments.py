"""watch and clean beside the segments of NCCL's neighbours, made for real in a container's own /dev/shm: Python's
SharedMemory (vLLM's psm_ rings, SGLang's named queue), a Ray-style store (libc mkstemp, mmap, unlink) and Triton's
named region, each held by a live process, and left behind by processes killed with SIGKILL (their resource
tracker with them). The names' pure matching: tests/unit/shm/test_segments.py."""

from __future__ import annotations

import json

from shmdoctor.shm.segments import known
from tests.helpers import docker_run, unique_name, validate

MiB = 1 << 20

# One process per segment, in its own session so that SIGKILL takes its resource tracker too (otherwise the tracker
# unlinks a SharedMemory its dead owner left, which a killed vLLM's does not).
MAKE = r"""
import json, os, signal, subprocess, sys, time

HOLD = '''
import ctypes, mmap, os, sys, time, uuid
from multiprocessing import shared_memory
kind = sys.argv[1]
if kind == "psm":
    m = shared_memory.SharedMemory(create=True, size=1 << 20)
    name, buf = m.name, m.buf
elif kind == "sgl":
    m = shared_memory.SharedMemory(name=f"sgl_shm_mq_{os.getpid()}_{uuid.uuid4().hex[:8]}", create=True, size=1 << 20)
    name, buf = m.name, m.buf
else:
    if kind == "plasma":  # Ray's plasma store: mkstemp, then unlink at once; only its map is left
        path = ctypes.create_string_buffer(b"/dev/shm/plasmaXXXXXX")
        fd = ctypes.CDLL(None).mkstemp(path)
        path = path.value.decode()
    else:
        path = f"/dev/shm/triton_python_backend_shm_region_{uuid.uuid4()}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.ftruncate(fd, 1 << 20)
    buf = mmap.mmap(fd, 1 << 20)
    os.close(fd)
    if kind == "plasma":
        os.unlink(path)
    name = os.path.basename(path)
buf[:] = b"1" * (1 << 20)  # pages taken as written
print(name, flush=True)
time.sleep(600)
'''

def start(kind):
    p = subprocess.Popen([sys.executable, "-c", HOLD, kind], stdout=subprocess.PIPE, text=True, start_new_session=True)
    return p, p.stdout.readline().strip()

held = [start(k) for k in ("psm", "sgl", "plasma", "triton")]
dead = [start(k) for k in ("psm", "sgl", "triton")]
for p, _ in dead:
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
time.sleep(0.5)  # the killed sessions' resource trackers are gone too
print(json.dumps({"held": [n for _, n in held], "dead": [n for _, n in dead]}))
for argv in (["watch", "--duration", "0.5", "--interval", "0.25", "--holders-every", "0.1"], ["clean", "--exclusive"],
             ["clean", "--yes", "--exclusive"]):
    out = subprocess.run([sys.executable, "-m", "shmdoctor", *argv, "--format", "json"], capture_output=True, text=True)
    print(json.dumps({"argv": argv, "rc": out.returncode, "stdout": out.stdout, "stderr": out.stderr}))
print(json.dumps(sorted(os.listdir("/dev/shm"))))
"""


def test_watch_attributes_and_clean_keeps_or_frees_each_consumers_segments(images):
    proc = docker_run(
        "--name", unique_name("consumer-segments"), "--shm-size=64m", "--init", cmd=["python", "-c", MAKE], timeout=180
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    made, watched, listed, cleaned, left = (json.loads(line) for line in proc.stdout.splitlines())
    held_psm, held_sgl, plasma, held_triton = made["held"]
    dead_psm, dead_sgl, dead_triton = made["dead"]
    assert all(known(n) for n in made["held"] + made["dead"]), made

    # watch: the use per consumer, the listed files and the unlinked plasma store (seen only in its holder's map)
    assert watched["rc"] == 0, watched["stderr"]
    *samples, summary = (validate(json.loads(line)) for line in watched["stdout"].splitlines())
    assert samples[0]["consumers"] == summary["consumers"]
    use = summary["consumers"]
    assert use["vllm"] >= 2 * MiB and use["sglang"] >= 2 * MiB and use["triton"] >= 2 * MiB
    assert MiB <= use["ray"] < 2 * MiB  # the held one: unlinked, found through its holder
    assert set(use) <= {"vllm", "sglang", "ray", "triton", "other"}
    # and each holder by what it holds: one process a consumer here
    assert sorted(c for h in summary["holders"] for c in h["consumers"]) == ["ray", "sglang", "triton", "vllm"]

    # clean: only the SGLang queue whose creator (the pid in its name) is dead is proved leaked
    assert listed["rc"] == 0 and cleaned["rc"] == 0, listed["stderr"] + cleaned["stderr"]
    listed, cleaned = validate(json.loads(listed["stdout"])), validate(json.loads(cleaned["stdout"]))
    assert [e["name"] for e in listed["leaked"]] == [dead_sgl]
    assert [e["name"] for e in cleaned["removed"]] == [dead_sgl] and cleaned["freed_bytes"] >= MiB
    why = {e["name"]: e["why"] for e in cleaned["kept"]}
    assert set(why) == {held_psm, held_sgl, held_triton, dead_psm, dead_triton}
    assert all(why[n].startswith("held by pid ") for n in (held_psm, held_sgl, held_triton))
    assert why[dead_psm] == known(dead_psm).kept and why[dead_triton] == known(dead_triton).kept
    assert plasma not in left and dead_sgl not in left
    assert sorted(left) == sorted([held_psm, held_sgl, held_triton, dead_psm, dead_triton])
