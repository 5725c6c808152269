"""How long a Prometheus scrape of `shmdoctor exporter` takes with 1 running container, then with 200.

The exporter runs as a user runs it (a process on a loopback port, the Docker engine of this machine); the scrape
is timed from the client as Prometheus makes it (gzip accepted), over --scrapes requests after the exporter has seen
every container. READING is the exporter's own time to read and judge every target, which it does every --interval
seconds (0.5 here) off the scrape's path. Containers are busybox `sleep`s with --network none, named
sdt-bench-<pid>-N, removed at the end. Other containers running on the engine are scraped too: TARGETS counts them.

    .venv/bin/python benchmarks/exporter_scrape.py [--containers 200] [--scrapes 100]
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parent.parent
IMAGE = "shmdoctor-test/busybox:1"
PREFIX = f"sdt-bench-{os.getpid()}"


def start(i: int) -> None:
    subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--name",
            f"{PREFIX}-{i}",
            "--network",
            "none",
            "--shm-size=64m",
            IMAGE,
            "sleep",
            "3600",
        ],
        check=True,
        capture_output=True,
    )


def scrape(url: str) -> tuple[float, str]:
    """One scrape as Prometheus makes it (gzip accepted), timed until the text is in hand."""
    t = time.perf_counter()
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=30) as r:
        body = r.read()
        if r.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
    return time.perf_counter() - t, body.decode()


def value(text: str, name: str) -> float:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name:
                return s.value
    raise KeyError(name)


def ours(text: str) -> int:
    for family in text_string_to_metric_families(text):
        if family.name == "shmdoctor_shm_size_bytes":
            return sum(s.labels["container"].startswith(PREFIX) for s in family.samples)
    return 0


def measure(url: str, want: int, scrapes: int) -> tuple[list[float], list[float], int]:
    deadline = time.monotonic() + 300
    while True:
        try:
            if ours(scrape(url)[1]) == want:
                break
        except OSError:  # not listening yet
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"the exporter did not see {want} containers within 300 s")
        time.sleep(0.5)
    for _ in range(5):  # warm: judgements cached, connections made
        scrape(url)
    client, readings = [], set()
    targets = 0
    for _ in range(scrapes):
        took, text = scrape(url)
        client.append(took)
        readings.add(value(text, "shmdoctor_scrape_duration_seconds"))  # one per reading (every --interval)
        targets = int(value(text, "shmdoctor_targets"))
        time.sleep(0.05)
    return client, sorted(readings), targets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--containers", type=int, default=200)
    parser.add_argument("--scrapes", type=int, default=100)
    args = parser.parse_args()

    port = 19000 + os.getpid() % 1000
    url = f"http://127.0.0.1:{port}/metrics"
    exporter = subprocess.Popen(
        [sys.executable, "-m", "shmdoctor", "exporter", "--listen", f"127.0.0.1:{port}", "--interval", "0.5"],
        cwd=REPO,
        stderr=subprocess.DEVNULL,
    )
    rows = []
    try:
        start(0)
        rows.append((1, *measure(url, 1, args.scrapes)))
        t = time.monotonic()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(start, range(1, args.containers)))
        print(f"started {args.containers - 1} more containers in {time.monotonic() - t:.0f} s", file=sys.stderr)
        rows.append((args.containers, *measure(url, args.containers, args.scrapes)))
    finally:
        exporter.terminate()
        exporter.wait()
        names = [f"{PREFIX}-{i}" for i in range(args.containers)]
        for i in range(0, len(names), 20):  # a few at a time: an engine asked to remove hundreds at once may stall
            subprocess.run(["docker", "rm", "-f", *names[i : i + 20]], capture_output=True, timeout=300)

    print(f"{'CONTAINERS':>10}  {'TARGETS':>7}  {'SCRAPE MEDIAN':>13}  {'P95':>7}  {'READING MEDIAN':>14}")
    for n, client, server, targets in rows:
        p95 = sorted(client)[int(0.95 * (len(client) - 1))]
        print(
            f"{n:>10}  {targets:>7}  {statistics.median(client) * 1000:>10.1f} ms  {p95 * 1000:>4.1f} ms"
            f"  {statistics.median(server) * 1000:>11.1f} ms"
        )
    one, many = statistics.median(rows[0][1]), statistics.median(rows[1][1])
    print(f"scrape with {rows[1][0]} containers / with 1: {many / one:.2f}x ({many * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
