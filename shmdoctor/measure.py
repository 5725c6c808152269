"""Measure one collated batch from a real dataset or DataLoader. torch is imported here only, and only when called."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from .errors import UsageError
from .loader import LoaderSpec

SAMPLES = 4  # samples read to measure a batch: enough to see per-sample sizes, cheap on a real dataset


def load_dataset(spec: str) -> Any:
    """'pkg.module:attr' (a Dataset, or a callable returning one) -> the dataset, imported from the current dir too."""
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise UsageError(f"dataset {spec}: expected MODULE:ATTR, e.g. mypkg.data:train_set")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module)
    except Exception as e:  # the user's module may raise anything while importing
        raise UsageError(f"dataset {spec}: cannot import {module}: {type(e).__name__}: {e}") from None
    for name in attr.split("."):
        try:
            obj = getattr(obj, name)
        except AttributeError:
            raise UsageError(f"dataset {spec}: {module} has no attribute {attr!r}") from None
    if callable(obj) and not _is_dataset(obj):
        try:
            obj = obj()
        except Exception as e:
            raise UsageError(f"dataset {spec}: calling {attr}() raised {type(e).__name__}: {e}") from None
    if not _is_dataset(obj) or isinstance(obj, type):
        raise UsageError(f"dataset {spec}: {type(obj).__name__} is not a dataset (needs __getitem__ or __iter__)")
    return obj


def _is_dataset(obj: Any) -> bool:
    return not isinstance(obj, type) and (hasattr(obj, "__getitem__") or hasattr(obj, "__iter__"))


def _samples(dataset: Any, n: int, spec: str) -> list:
    out: list = []
    try:
        if hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__"):
            for i in range(min(n, len(dataset))):
                out.append(dataset[i])
        else:
            for item in dataset:
                out.append(item)
                if len(out) == n:
                    break
    except Exception as e:
        raise UsageError(f"dataset {spec}: reading sample {len(out)} raised {type(e).__name__}: {e}") from None
    if not out:
        raise UsageError(f"dataset {spec}: it is empty")
    return out


def _tensors(obj: Any, torch: Any) -> list:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors(v, torch)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _tensors(v, torch)]
    return []


def sample_tensors(dataset: Any, batch_size: int | None, collate_fn: Any = None, spec: str = "") -> tuple[float, ...]:
    """Bytes per sample of each tensor in a collated batch: every tensor a worker returns becomes its own
    page-rounded /dev/shm segment, so the loader config sizes each one for the batch size.

    Collates a few real samples with the loader's collate_fn (default_collate by default). batch_size None means
    the dataset yields whole batches (DataLoader(batch_size=None)): the sizes of one item's tensors.
    """
    import torch
    from torch.utils.data import default_collate, default_convert

    spec = spec or type(dataset).__name__
    if batch_size is None:
        return tuple(
            float(t.nbytes) for t in _tensors((collate_fn or default_convert)(_samples(dataset, 1, spec)[0]), torch)
        )
    samples = _samples(dataset, min(SAMPLES, batch_size), spec)
    try:
        batch = (collate_fn or default_collate)(samples)
    except Exception as e:
        raise UsageError(f"dataset {spec}: collating samples raised {type(e).__name__}: {e}") from None
    return tuple(t.nbytes / len(samples) for t in _tensors(batch, torch))


def loader_settings(loader: Any) -> LoaderSpec:
    """What a torch DataLoader says about itself, plus its measured batch."""
    import torch

    batch_size = loader.batch_size
    if batch_size is None and loader.batch_sampler is not None:
        batch_size = getattr(loader.batch_sampler, "batch_size", None)
        if batch_size is None:  # a custom batch sampler: the length of the batch it draws first
            batch_size = len(next(iter(loader.batch_sampler)))
    auto = loader.batch_size is not None or loader.batch_sampler is not None
    return LoaderSpec(
        batch_size=batch_size if auto else 1,
        num_workers=loader.num_workers,
        prefetch_factor=loader.prefetch_factor if loader.num_workers else None,
        pin_memory=loader.pin_memory and torch.cuda.is_available(),  # torch ignores pin_memory without CUDA
        sample_tensors=sample_tensors(loader.dataset, batch_size if auto else None, loader.collate_fn),
    )
