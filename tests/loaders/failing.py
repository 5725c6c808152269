"""Real failures for explain and run, made to happen in containers: python tests/loaders/failing.py MODE [...]

seed [--batches N --workers W --step S]  the seed article's loader (batch 100 x 1 MiB), uncaught: its own traceback
     [--fill]                             first step: until the whole prefetch is in /dev/shm (or a worker died)
fds [--tensors N]                         each batch a list of N small tensors: one descriptor each (ancdata)
sigbus [--mib N]                          a file in /dev/shm, ftruncated and touched past what the tmpfs has: SIGBUS
loader-sigbus [--mib N]                   a DataLoader whose worker does the same (PyTorch before 2.10 sized its
                                          batches' segments so): the worker dies of SIGBUS, the loader says so
ignore-term [--seconds S | --until-line]  ignores SIGTERM, prints 'ignoring SIGTERM' when one comes, exits 0 after S
                                          (or once a line comes on stdin: the test says when, no clock to race)
handle-term                               exits 0 on SIGTERM, printing 'got SIGTERM'
count-int                                 counts SIGINTs for 0.5 s after the first, prints 'got N SIGINT', exits 130
"""

from __future__ import annotations

import argparse
import mmap
import os
import signal
import sys
import time


def seed(args) -> None:
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Samples(Dataset):
        sample = torch.ones(2**18)  # 1 MiB, the article's one tensor: the workers' memory is the batches they build

        def __len__(self) -> int:
            return 100 * args.batches

        def __getitem__(self, idx: int):
            return self.sample

    loader = DataLoader(Samples(), batch_size=100, num_workers=args.workers, prefetch_factor=args.prefetch)
    done, start = 0, time.monotonic()
    batches = iter(loader)
    for _batch in batches:
        if args.fill and not done:  # the batch held and every prefetched one: the formula's whole need, at once
            in_flight = min(args.batches, args.workers * args.prefetch + 1)
            _until_in_shm(in_flight * 100 * 2**20, batches._workers)
        done += 1
        time.sleep(args.step)  # the training step, slower than loading
    print(f"trained on {done} batches in {time.monotonic() - start:.2f} s", flush=True)


def _until_in_shm(need: int, workers, seconds: float = 120.0) -> None:
    """Waits until /dev/shm holds `need` bytes, as a step slower than loading lets it, whatever the machine's load;
    or until a worker died (the OOM killer's choice, say), or `seconds` passed: the loop then goes on and shows why."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and all(w.is_alive() for w in workers):
        st = os.statvfs("/dev/shm")
        if (st.f_blocks - st.f_bfree) * st.f_frsize >= need:
            return
        time.sleep(0.05)


def fds(args) -> None:
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Many(Dataset):
        def __len__(self) -> int:
            return 64

        def __getitem__(self, idx: int):
            return [torch.zeros(16) for _ in range(args.tensors)]

    held = []
    for batch in DataLoader(Many(), batch_size=None, num_workers=2, timeout=20):  # a worker's error hangs it
        held.append(batch)  # kept: every tensor keeps its descriptor
    print(f"received {len(held)} batches", flush=True)


def sigbus(args) -> None:
    _touch_shm(args.mib)
    print("no bus error", flush=True)


def loader_sigbus(args) -> None:
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Batches(Dataset):
        def __len__(self) -> int:
            return 8

        def __getitem__(self, idx: int):
            _touch_shm(args.mib)
            return torch.zeros(1)

    for _batch in DataLoader(Batches(), batch_size=1, num_workers=2):
        pass
    print("no bus error", flush=True)


def _touch_shm(mib: int) -> None:
    path = f"/dev/shm/sdt-sigbus-{os.getpid()}"
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.unlink(path)
    size = mib * 2**20
    os.ftruncate(fd, size)  # sparse: no page is taken yet, as PyTorch before 2.10 did
    m = mmap.mmap(fd, size)
    print(f"touching {mib} MiB of /dev/shm", flush=True)
    for off in range(0, size, mmap.PAGESIZE):
        m[off] = 1  # past the tmpfs's size: SIGBUS


def ignore_term(args) -> None:
    signal.signal(signal.SIGTERM, lambda *_: print("ignoring SIGTERM", flush=True))
    print("ready", flush=True)
    if args.until_line:
        sys.stdin.readline()
    end = time.monotonic() + (0 if args.until_line else args.seconds)
    while time.monotonic() < end:
        time.sleep(0.05)
    print("done", flush=True)


def handle_term(args) -> None:
    def stop(*_):
        print("got SIGTERM", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    print("ready", flush=True)
    while True:
        time.sleep(0.05)


def count_int(args) -> None:
    got = []
    signal.signal(signal.SIGINT, lambda *_: got.append(time.monotonic()))
    print("ready", flush=True)
    while not got:
        time.sleep(0.01)
    time.sleep(0.5)  # a second delivery, had there been one, is in by then
    print(f"got {len(got)} SIGINT", flush=True)
    sys.exit(130)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "mode", choices=["seed", "fds", "sigbus", "loader-sigbus", "ignore-term", "handle-term", "count-int"]
    )
    ap.add_argument("--batches", type=int, default=12)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--prefetch", type=int, default=2)
    ap.add_argument("--step", type=float, default=0.1)
    ap.add_argument("--fill", action="store_true")
    ap.add_argument("--tensors", type=int, default=200)
    ap.add_argument("--mib", type=int, default=128)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--until-line", action="store_true")
    args = ap.parse_args()
    modes = {
        "seed": seed,
        "fds": fds,
        "sigbus": sigbus,
        "loader-sigbus": loader_sigbus,
        "ignore-term": ignore_term,
        "handle-term": handle_term,
        "count-int": count_int,
    }
    modes[args.mode.replace("_", "-")](args)


if __name__ == "__main__":
    main()
