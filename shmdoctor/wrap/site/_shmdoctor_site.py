"""The child's half of `shmdoctor run`'s instrumentation (standard library only; torch is never imported here, only
patched once the program imports torch's DataLoader itself).

When `torch.utils.data.dataloader` is imported, its iterator's constructor is wrapped: each iterator records its
loader's settings (once per loader and process) and, with workers, gets a collate that records in each worker the
bytes of its first collated batch, measured before the real collate puts it in /dev/shm (so a batch whose very first
allocation fails is still measured). Records are JSON lines appended to CHANNEL/<pid>.jsonl, one write each.
Nothing is ever written to stdout or stderr; a failure of ours is recorded as such and the program goes on."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

CHANNEL = "SHMDOCTOR_RUN_CHANNEL"  # the folder run reads after its child ends
STDERR = "SHMDOCTOR_RUN_STDERR"  # set where the child's stderr is run's terminal, not run's pipe: copy sys.stderr
STDERR_CAP = 2**20  # bytes of a process's copy, past which it starts over beside the last (the end is what counts)
TARGET = "torch.utils.data.dataloader"
PAGE = 4096
MEASURED_ITERATORS = 2  # a loader's first iterators (epochs) are measured: one record per worker each
MAX_DEPTH = 16  # a batch nested deeper than this is not walked further
RANK_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")  # as torchrun sets them


def page_round(n: int) -> int:
    return -(-n // PAGE) * PAGE


def record(kind: str, **fields: object) -> None:
    """One JSON line in this process's file of the channel; silent when it cannot be written."""
    folder = os.environ.get(CHANNEL)
    if not folder:
        return
    import json  # here: a process that never records never imports it

    line = json.dumps({"kind": kind, "pid": os.getpid(), **fields}, default=str) + "\n"
    try:
        fd = os.open(os.path.join(folder, f"{os.getpid()}.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode()[:4096])
        finally:
            os.close(fd)
    except OSError:
        pass


def failed(where: str, e: BaseException) -> None:
    record("error", where=where, error=f"{type(e).__name__}: {e}"[:300])


def _is_tensor(x: object) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "nbytes") and hasattr(x, "is_shared")


def _is_array(x: object) -> bool:
    return hasattr(x, "nbytes") and hasattr(x, "dtype") and hasattr(x, "__array__")


def collated_bytes(samples: list, depth: int = 0) -> tuple[int, int]:
    """(bytes, segments) of the batch default_collate makes of these samples: each tensor field, numpy array field
    or number field becomes one tensor stacked over the batch, one /dev/shm segment, page-rounded (as `check
    --dataset` counts it); mappings and sequences are collated field by field; anything else stays in the pipe."""
    first = samples[0]
    if depth > MAX_DEPTH:
        return 0, 0
    if _is_tensor(first) or _is_array(first):
        return page_round(sum(int(getattr(s, "nbytes", 0)) for s in samples)), 1
    if isinstance(first, bool):
        return page_round(len(samples)), 1
    if isinstance(first, (int, float)):
        return page_round(8 * len(samples)), 1  # int64, float64
    if isinstance(first, Mapping):
        parts = [collated_bytes([s[k] for s in samples if k in s] or [first[k]], depth + 1) for k in first]
    elif isinstance(first, (list, tuple)) and not isinstance(first, str):
        parts = [collated_bytes(list(field), depth + 1) for field in zip(*samples)]
    else:
        return 0, 0
    return sum(p[0] for p in parts), sum(p[1] for p in parts)


def tensor_bytes(batch: object, depth: int = 0) -> tuple[int, int]:
    """(bytes, segments) of the tensors in a batch a custom collate returned: each is copied into its own segment
    when the worker sends it (numpy arrays and other objects go through the pipe)."""
    if depth > MAX_DEPTH:
        return 0, 0
    if _is_tensor(batch):
        return page_round(int(batch.nbytes)), 1  # type: ignore[attr-defined]
    items = batch.values() if isinstance(batch, Mapping) else batch if isinstance(batch, (list, tuple)) else ()
    parts = [tensor_bytes(x, depth + 1) for x in items]
    return sum(p[0] for p in parts), sum(p[1] for p in parts)


class Collate:
    """The loader's collate, measured the first time each worker calls it (picklable: a spawned worker imports this
    module from sys.modules, where the worker's own sitecustomize put it)."""

    def __init__(self, collate, loader: str, default: bool, auto: bool):
        self.collate, self.loader, self.default, self.auto = collate, loader, default, auto  # auto: batches of samples
        self.seen_in: int | None = None  # the pid that measured: a forked worker starts with its parent's None

    def __call__(self, batch):
        if self.seen_in == os.getpid():
            return self.collate(batch)
        self.seen_in = os.getpid()
        samples = len(batch) if self.auto and isinstance(batch, list) else None  # else one item is what is sent
        if self.default and samples:  # measured before the collate allocates it in /dev/shm (and maybe fails)
            self._measure(collated_bytes, batch, samples)
            return self.collate(batch)
        out = self.collate(batch)
        self._measure(tensor_bytes, out, samples)
        return out

    def _measure(self, count, batch, samples: int | None) -> None:
        try:
            nbytes, segments = count(batch)
            record("batch", loader=self.loader, bytes=nbytes, segments=segments, samples=samples)
        except Exception as e:
            failed("batch", e)


def _ranks() -> dict:
    out = {}
    for name in RANK_VARIABLES:
        value = os.environ.get(name, "")
        if value.isascii() and value.isdigit() and len(value) < 8:
            out[name.lower()] = int(value)
    return out


def patch(module) -> None:
    """Wrap the iterator's constructor of this torch.utils.data.dataloader module."""
    base = module._BaseDataLoaderIter
    original = base.__init__
    seen: set[tuple] = set()
    measured: dict[str, int] = {}

    def __init__(self, loader, *args, **kwargs):
        original(self, loader, *args, **kwargs)
        try:
            key = f"{os.getpid()}:{id(loader)}"
            workers = int(getattr(loader, "num_workers", 0) or 0)
            measured[key] = measured.get(key, 0) + 1
            if workers > 0 and measured[key] <= MEASURED_ITERATORS and not isinstance(self._collate_fn, Collate):
                auto = bool(getattr(self, "_auto_collation", True))
                self._collate_fn = Collate(self._collate_fn, key, self._collate_fn is module.default_collate, auto)
            settings = dict(
                batch_size=loader.batch_size,
                num_workers=workers,
                prefetch_factor=loader.prefetch_factor if workers else None,
                pin_memory=bool(getattr(self, "_pin_memory", loader.pin_memory)),  # torch's: False without a GPU
                persistent_workers=bool(loader.persistent_workers),
            )
            if (key, *settings.values()) not in seen:  # once per loader, not per epoch
                seen.add((key, *settings.values()))
                record("loader", loader=key, **settings, **_ranks())
        except Exception as e:
            failed("loader", e)

    base.__init__ = __init__


class Finder:
    """A meta path finder that only waits for TARGET: it hands the import to the finders behind it and patches the
    module once it has run. One string comparison per import until then; gone after."""

    def find_spec(self, name, path=None, target=None):
        if name != TARGET:
            return None
        try:
            sys.meta_path.remove(self)
            spec = next((s for f in sys.meta_path if (s := _spec(f, name, path, target))), None)
            if spec is None or spec.loader is None:
                return None
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                try:
                    patch(module)
                    record("torch", version=str(getattr(sys.modules.get("torch"), "__version__", "")))
                except Exception as e:
                    failed("patch", e)

            spec.loader.exec_module = exec_module
            return spec
        except Exception as e:
            failed("import", e)
            return None


def _spec(finder, name, path, target):
    find = getattr(finder, "find_spec", None)
    return find(name, path, target) if find is not None else None


class StderrCopy:
    """sys.stderr as it was, what is written through it also appended to CHANNEL/<pid>.err (<pid>.err.old: the
    CAP before): the tracebacks, warnings and log lines run's diagnosis reads, where run leaves its terminal to the
    child as its stderr. Everything else is the stream's own (isatty, fileno, encoding, buffer): the terminal stays
    a terminal. What bypasses sys.stderr (C code writing to descriptor 2, .buffer) is not copied."""

    def __init__(self, stream, folder: str):
        self._stream, self._folder = stream, folder
        self._pid, self._fd, self._written = 0, -1, 0

    def write(self, text):
        n = self._stream.write(text)
        try:  # noqa: SIM105 (contextlib: one import more in every Python process of the job)
            self._copy(text)
        except Exception:
            pass
        return n

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def _copy(self, text) -> None:
        if not isinstance(text, str) or not text:
            return
        if self._pid != os.getpid():  # first write, or a forked child's: a file of its own
            if self._fd >= 0:
                os.close(self._fd)  # the parent's, inherited
            self._pid, self._fd, self._written = os.getpid(), -1, 0
        data = text.encode("utf-8", "backslashreplace")
        path = os.path.join(self._folder, f"{self._pid}.err")
        if self._fd < 0 or self._written + len(data) > STDERR_CAP:
            if self._fd >= 0:
                os.close(self._fd)
                os.replace(path, path + ".old")
            self._fd, self._written = -1, 0
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(self._fd, data[-STDERR_CAP:])
        self._written += len(data)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def install() -> None:
    folder = os.environ.get(CHANNEL)
    if folder and TARGET not in sys.modules:
        sys.meta_path.insert(0, Finder())
    if folder and os.environ.get(STDERR) and sys.stderr is not None and not isinstance(sys.stderr, StderrCopy):
        sys.stderr = StderrCopy(sys.stderr, folder)
