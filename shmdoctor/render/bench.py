"""bench's document as text and as JSON: the recommendation first (with the transfer floor, persistent workers,
pin_memory_device and what was skipped), then the fix, the findings and the table. Formats only: the verdict, fixes
and findings are the document's."""

from __future__ import annotations

import json
from typing import Any

from ..bench.document import BenchDocument
from ..bench.model import Config
from ..sizes import format_size
from .text import said_lines
from .text import style as _style


def to_json(doc: BenchDocument) -> str:
    return json.dumps(doc.body, indent=2)


def to_text(doc: BenchDocument) -> str:
    return render_text(doc.body)


def _num(value: float | None, fmt: str, scale: float = 1) -> str:
    return "-" if value is None else format(value * scale, fmt)


def _size(value: int | None) -> str:
    return "-" if value is None else format_size(value)


def table(doc: dict[str, Any]) -> list[str]:
    cuda = doc["device"]["name"].startswith("cuda")
    persist = any(r.get("persistent_workers") for r in doc["results"])
    pin_dev = any(r.get("pin_memory_device") for r in doc["results"])
    head = (
        ["WORKERS", "PREFETCH"]
        + (["PERSIST"] if persist else [])
        + (["PIN", "NB"] if cuda else [])
        + (["PIN DEV"] if pin_dev else [])
        + [
            "STATUS",
            "S/BATCH",
            "WAIT/BATCH",
            *(["H2D ms"] if cuda else []),
            "SAMPLES/S",
            "MiB/S",
            "STARTUP s",
            "PEAK SHM",
            "PREDICTED",
            "PEAK/PRED",
        ]
    )
    rows = [head]
    for r in doc["results"]:
        rows.append(
            [str(r["num_workers"]), "-" if r["prefetch_factor"] is None else str(r["prefetch_factor"])]
            + ([str(r["persistent_workers"]).lower()] if persist else [])
            + ([str(r["pin_memory"]).lower(), str(r["non_blocking"]).lower()] if cuda else [])
            + ([r.get("pin_memory_device") or "-"] if pin_dev else [])
            + [
                r["status"] + ("" if r["stable"] or r["status"] != "ok" else " (unsettled)"),
                _num(r["batch_seconds"], ".3f"),
                _num(r["data_wait_seconds"], ".3f"),
                *([_num(r["h2d_seconds"], ".2f", 1000)] if cuda else []),
                _num(r["samples_per_second"], ".1f"),
                _num(r["bytes_per_second"], ".0f", 1 / 2**20),
                _num(r["first_batch_seconds"], ".2f"),
                _size(r["peak_shm_bytes"]),
                _size(r["predicted_shm_bytes"]),
                _num(r["peak_to_predicted"], ".2f"),
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return [
        "  ".join(cell.rjust(w) if i != len(head) else cell for i, (cell, w) in enumerate(zip(row, widths)))
        for row in rows
    ]


def _transfer_lines(doc: dict[str, Any], rec: dict[str, Any]) -> list[str]:
    """On CUDA: the transfer floor (pinned bandwidth) and how much of the recommended config's copy the step hides."""
    rate = doc["device"].get("h2d_pinned_bytes_per_second")
    mine = next((r for r in doc["results"] if Config.of(r) == Config.of(rec) and r["status"] == "ok"), None)
    if not rate or mine is None or not mine.get("h2d_seconds") or not mine.get("batch_bytes"):
        return []
    floor, copy = mine["batch_bytes"] / rate, mine["h2d_seconds"]
    overhead = max(0.0, mine["batch_seconds"] - doc["workload"]["step_time_seconds"] - mine["data_wait_seconds"])
    hidden = max(0.0, copy - overhead)
    return [
        f"           transfer floor: pinned host→device {rate / 1e9:.1f} GB/s, {floor * 1000:.2f} ms for a "
        f"{_size(mine['batch_bytes'])} batch; this config's copy takes {copy * 1000:.2f} ms, of which "
        f"{hidden * 1000:.2f} ms ({hidden / copy:.0%}) hides under the step ({overhead * 1000:.2f} ms of loop "
        "overhead a batch beyond the step and the wait)"
    ]


def _persistence_lines(doc: dict[str, Any]) -> list[str]:
    """Where persistent_workers was swept: what it saves at each next epoch's start, and what it keeps meanwhile."""
    out, cuda = [], doc["device"]["name"].startswith("cuda")
    timed = [r for r in doc["results"] if r["status"] == "ok" and r.get("next_epoch_start_seconds") is not None]
    for kept in (r for r in timed if r["persistent_workers"]):
        twin = next(
            (
                r
                for r in timed
                if not r["persistent_workers"] and Config.of(r) == Config.of({**kept, "persistent_workers": False})
            ),
            None,
        )
        if twin is None:
            continue
        saved = twin["next_epoch_start_seconds"] - kept["next_epoch_start_seconds"]
        epoch = saved / (0.05 * kept["batch_seconds"]) if saved > 0 and kept["batch_seconds"] else None
        pays = (
            f"{saved:.2f} s saved an epoch, 5% or more of an epoch under ~{epoch:.0f} batches, "
            f"{epoch * kept['batch_seconds']:.1f} s: it pays for epochs that short, or workers slower to start"
            if epoch
            else "nothing saved: it does not pay here"
        )
        pinned = "; pin_memory's thread has moved them on, to pinned host memory" if kept["pin_memory"] and cuda else ""
        out.append(
            f"           persistent_workers=true at num_workers={kept['num_workers']}: the next epoch starts in "
            f"{kept['next_epoch_start_seconds']:.2f} s instead of {twin['next_epoch_start_seconds']:.2f} s ({pays}); "
            "an epoch cut short (a loop that breaks after so many steps) leaves its batches in flight with the kept "
            f"workers: {_size(kept['between_epochs_shm_bytes'])} of /dev/shm held until the next epoch starts "
            f"({_size(twin['between_epochs_shm_bytes'])} without){pinned}"
        )
    return out


def _pin_device_lines(doc: dict[str, Any], cuda: bool) -> list[str]:
    """Where pin_memory_device was swept: each config that passed it against the same config without it, measured,
    and whether torch ignored it (2.9 on: deprecated, warned at iter())."""
    out = []
    ran = [r for r in doc["results"] if r["status"] == "ok"]
    for given in (r for r in ran if r.get("pin_memory_device")):
        bare = Config.of({**given, "pin_memory_device": None})
        twin = next((r for r in ran if Config.of(r) == bare), None)
        mine = f"{given['batch_seconds']:.3f} s a batch and {_num(given['h2d_seconds'], '.2f', 1000)} ms H2D"
        against = (
            f", against {twin['batch_seconds']:.3f} s and {_num(twin['h2d_seconds'], '.2f', 1000)} ms without it"
            if twin
            else " (the same config without it did not run)"
        )
        ignored = (
            f"; torch {doc['device']['torch']} ignores it (deprecated; pinned memory goes to the current "
            "accelerator): leave it out"
            if given.get("pin_memory_device_ignored")
            else ""
        )
        out.append(
            f"           pin_memory_device={given['pin_memory_device']} at {bare.label(cuda)}: {mine}{against}{ignored}"
        )
    return out


def _skipped_lines(doc: dict[str, Any], cuda: bool) -> list[str]:
    by_reason: dict[str, list[str]] = {}
    for r in doc["results"]:
        if r["status"] == "skipped":
            by_reason.setdefault(r["message"], []).append(str(r["num_workers"]))
    return [f"           skipped num_workers={','.join(dict.fromkeys(w))}: {why}" for why, w in by_reason.items()]


def render_text(doc: dict[str, Any]) -> str:
    cuda = doc["device"]["name"].startswith("cuda")
    rec, out = doc["recommendation"], []
    if rec is None:
        out.append(
            _style("NO RECOMMENDATION", "red", bold=True)
            + "  no config ran to the end within the shared memory available"
        )
    else:
        fast = rec["best_fitting"]
        out.append(
            f"{_style('RECOMMEND', 'green', bold=True)}  {Config.of(rec).label(cuda)}: "
            f"{rec['batch_seconds']:.3f} s a batch, {_size(rec['predicted_shm_bytes'])} of /dev/shm"
        )
        why = (
            "the fastest config that fits"
            if fast == {k: rec[k] for k in fast}
            else f"the fewest workers at the knee (within {rec['tolerance']:.0%} of the fastest that fits, or not "
            "waiting for data) "
            f"({Config.of(fast).label(cuda)}: {fast['batch_seconds']:.3f} s a batch)"
        )
        out.append(f"           {why}; {_size(rec['available_shm_bytes'])} of /dev/shm available")
        best = rec["best"]
        if not best["fits"]:
            out.append(
                f"           the fastest ({Config.of(best).label(cuda)}: {best['batch_seconds']:.3f} s) needs "
                f"{_size(best['predicted_shm_bytes'])}: docker run {' '.join(best['docker_args'])} ..."
            )
        alike = rec.get("within_noise") or []  # absent from documents saved before it was measured
        if alike:
            others = "; ".join(f"{Config.of(r).label(cuda)}: {r['batch_seconds']:.3f} s" for r in alike)
            out.append(
                f"           within noise of it ({rec['tolerance']:.0%}), as good: {others}; which of them is "
                "fastest can change from one run to the next"
            )
        out.extend(_transfer_lines(doc, rec))
    out.extend(_persistence_lines(doc))
    out.extend(_pin_device_lines(doc, cuda))
    out.extend(_skipped_lines(doc, cuda))
    said = [(fx.get("text"), fx["summary"], fx["caveat"]) for f in doc["findings"] for fx in f["fixes"]]
    if said:  # each as the document says it, in the form of the place bench ran
        out.append("")
        out.extend(said_lines(said))
    if doc["findings"]:
        out.append("\nFindings")
        for f in doc["findings"]:
            out.append(f"  {f['severity']:<8} {f['id']}: {f['message']}")
    out.append("")
    out.extend(table(doc))
    dev, work, shm = doc["device"], doc["workload"], doc["shm"]
    sample = f" × {format_size(work['sample_bytes'])}" if work["sample_bytes"] else ""
    latency = f", {work['item_latency_seconds']:g} s a sample" if work["dataset"] == "synthetic" else ""
    where = f"{_size(shm['size_bytes'])}, {_size(shm['available_bytes'])} available" if shm["size_bytes"] else "none"
    out.append(
        f"\ndevice {dev['name']}{' (' + dev['model'] + ')' if dev.get('model') else ''}, torch {dev['torch']}; "
        f"/dev/shm {where}; {work['dataset']} data, batch {work['batch_size']}{sample}{latency}, "
        f"step {work['step_time_seconds']:g} s"
    )
    out.append(
        "S/BATCH: one loop iteration (wait + copy + step) once settled; WAIT: blocked in next(); "
        "STARTUP: iter() to the first batch; PEAK SHM: statvfs peak over the baseline; "
        "PEAK/PRED: that peak less the iterator's own pages, over the prediction"
    )
    return "\n".join(out)
