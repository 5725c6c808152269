"""--plot: a PNG of the sweep, per-batch time and the loop's wait on top, peak against predicted /dev/shm below.
matplotlib is an optional extra (shmdoctor[plot]), imported only here and only when asked."""

from __future__ import annotations

from typing import Any

from ..errors import UsageError


def require() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'shmdoctor[plot]'") from None


def write(doc: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cuda = doc["device"]["name"].startswith("cuda")
    results = doc["results"]
    labels = [
        f"w{r['num_workers']}"
        + (f" p{r['prefetch_factor']}" if r["prefetch_factor"] is not None else "")
        + (f"\n{'P' if r['pin_memory'] else '-'}{'N' if r['non_blocking'] else '-'}" if cuda else "")
        + (" D" if r.get("pin_memory_device") else "")  # pin_memory_device passed
        for r in results
    ]
    x = range(len(results))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(6, 0.7 * len(results) + 2), 7), sharex=True)
    top.bar(x, [r["batch_seconds"] or 0 for r in results], color="tab:blue", label="per batch (wait + copy + step)")
    top.bar(x, [r["data_wait_seconds"] or 0 for r in results], color="tab:orange", label="waiting for data")
    for i, r in enumerate(results):
        if r["status"] != "ok":
            top.text(i, 0, r["status"], rotation=90, ha="center", va="bottom", color="red")
    top.set_ylabel("seconds a batch")
    top.legend()
    rec = doc["recommendation"]
    if rec:
        top.set_title(
            f"recommended: num_workers={rec['num_workers']}"
            + (f", pin_memory={rec['pin_memory']}, non_blocking={rec['non_blocking']}" if cuda else "")
        )
    mib = 2**20
    width = 0.4
    bottom.bar(
        [i - width / 2 for i in x],
        [(r["peak_shm_bytes"] or 0) / mib for r in results],
        width,
        label="peak /dev/shm (measured)",
        color="tab:green",
    )
    bottom.bar(
        [i + width / 2 for i in x],
        [r["predicted_shm_bytes"] / mib for r in results],
        width,
        label="predicted need",
        color="tab:gray",
    )
    available, tallest = (
        doc["shm"]["available_bytes"],
        max([r["predicted_shm_bytes"] for r in results] + [r["peak_shm_bytes"] or 0 for r in results]),
    )
    if available and available <= 2 * tallest:  # a line far above the bars would flatten them
        bottom.axhline(available / mib, color="red", linestyle="--", label="available")
    bottom.set_ylabel(f"MiB ({available / mib:.0f} available)" if available else "MiB")
    bottom.set_xticks(list(x), labels)
    bottom.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
