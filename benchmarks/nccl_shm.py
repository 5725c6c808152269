"""NCCL's /dev/shm on two GPUs of one host, measured against the term shmdoctor computes (issue 17).

    python3 benchmarks/nccl_shm.py            # every case, a table and the NCCL_DEBUG transport lines
    python3 benchmarks/nccl_shm.py --case shm-eager --ops alltoall   # one case (its log on stdout)
    python3 benchmarks/nccl_shm.py --case shm-eager --wrap 'python3 -m shmdoctor run --'

Each case starts two ranks (one process each, torch's NCCL, env:// rendezvous on loopback) with its NCCL_* variables,
runs an all-reduce of 4 MiB (and, with --ops alltoall, an all-to-all of 4 MiB), holds a second, and ends. The parent
samples /dev/shm (statvfs, every millisecond, as `watch`) and lists the `nccl-*` files it sees; NCCL unlinks a segment
once its peer attached, so statvfs is the figure. NVLink multicast (NVLS) is off in every case.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shmdoctor.bench.sampler import shm_used  # noqa: E402
from shmdoctor.consumers import nccl, nccl_transport  # noqa: E402
from shmdoctor.model import SHM  # noqa: E402
from shmdoctor.sizes import MiB  # noqa: E402

BASE = {"NCCL_NVLS_ENABLE": "0", "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ALLOC"}
CASES = {
    "default": {},
    "p2p-off": {"NCCL_P2P_DISABLE": "1"},
    "shm-eager": {"NCCL_P2P_DISABLE": "1", "NCCL_CUMEM_ENABLE": "0"},
    "shm-eager-1m": {"NCCL_P2P_DISABLE": "1", "NCCL_CUMEM_ENABLE": "0", "NCCL_BUFFSIZE": str(1 * MiB)},
    "cumem-host": {"NCCL_P2P_DISABLE": "1", "NCCL_CUMEM_ENABLE": "1", "NCCL_CUMEM_HOST_ENABLE": "1"},
    "shm-off": {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"},
}
TRANSPORT = re.compile(r"via (\S+)")
LIMIT, GRACE = 120, 10  # seconds for a case; for a rank once its peer failed


def rank_main(rank: int, ops: str) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method="env://", rank=rank, world_size=2, device_id=torch.device("cuda", rank))
    x = torch.ones(MiB, device="cuda")  # 4 MiB of float32
    dist.all_reduce(x)
    if ops == "alltoall":
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x)
    torch.cuda.synchronize()
    if rank == 0:
        print(f"nccl {'.'.join(map(str, torch.cuda.nccl.version()))} torch {torch.__version__}", flush=True)
    time.sleep(1.0)
    dist.destroy_process_group()


def used() -> int:
    return shm_used(SHM) or 0


def run_case(name: str, ops: str, port: int, wrap: list[str] | None = None) -> dict:
    env = {**os.environ, **BASE, **CASES[name], "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    base, peak, seen, stop = used(), [0], set(), threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], used() - base)
            seen.update(f for f in os.listdir("/dev/shm") if f.startswith("nccl"))
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    me = [sys.executable, __file__, "--rank"]
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp, f"rank{r}.log") for r in (0, 1)]
        procs = []
        for r, path in enumerate(paths):
            with open(path, "w") as out:
                argv = [*(wrap or []), *me, str(r), "--ops", ops]
                procs.append(subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT))
        # A rank that fails leaves its peer waiting in NCCL for ever: once one ends badly, the other has GRACE seconds.
        end, cut = time.monotonic() + LIMIT, False
        while any(p.poll() is None for p in procs) and time.monotonic() < end:
            if not cut and any(p.returncode not in (None, 0) for p in procs):
                cut, end = True, min(end, time.monotonic() + GRACE)
            time.sleep(0.1)
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        logs = [path.read_text(errors="replace") for path in paths]
    stop.set()
    sampler.join()
    transports = sorted({m for log in logs for m in TRANSPORT.findall(log)})
    transport, _ = nccl_transport("auto", CASES[name])
    buffsize = int(CASES[name].get("NCCL_BUFFSIZE", 4 * MiB))
    predicted = nccl(2, transport, buffsize=buffsize, all_to_all=ops == "alltoall")
    version = next((line for log in logs for line in log.splitlines() if line.startswith("nccl ")), "")
    return {
        "case": name,
        "ops": ops,
        "codes": [p.returncode for p in procs],
        "peak": peak[0],
        "files": sorted(seen),
        "transports": transports,
        "predicted": predicted,
        "version": version,
        "logs": logs,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rank", type=int)
    parser.add_argument("--ops", default="allreduce", choices=("allreduce", "alltoall"))
    parser.add_argument("--case", choices=sorted(CASES))
    parser.add_argument("--wrap", help="a command each rank runs under, e.g. 'python3 -m shmdoctor run --'")
    args = parser.parse_args()
    if args.rank is not None:
        rank_main(args.rank, args.ops)
        return
    if args.case:
        r = run_case(args.case, args.ops, 29600, shlex.split(args.wrap or ""))
        print("\n".join(r["logs"]))
        print(f"case {r['case']} {r['ops']}: exit {r['codes']}, /dev/shm peak {r['peak']} B", flush=True)
        sys.exit(max(abs(c) for c in r["codes"]))
    print(f"{'case':<14} {'ops':<9} {'exit':<7} {'peak /dev/shm':>14} {'predicted':>12}  transports; nccl-* files seen")
    version = ""
    for i, (name, ops) in enumerate((n, o) for n in CASES for o in ("allreduce", "alltoall")):
        r = run_case(name, ops, 29500 + i)
        version = version or r["version"]
        print(
            f"{name:<14} {ops:<9} {','.join(map(str, r['codes'])):<7} {r['peak']:>14,} {r['predicted'].bytes:>12,}  "
            f"{' '.join(r['transports']) or '-'}; {len(r['files'])} files",
            flush=True,
        )
        print(f"{'':<14} predicted: {r['predicted'].formula}", flush=True)
    print(f"{version}; peak: statvfs over the baseline, in bytes")


if __name__ == "__main__":
    main()
