"""How long `shmdoctor check` takes next to `python -c "import torch"`, pair by pair (goal, issue 27: at most 0.05
of it), and what check imports beyond Python's start and Click (`python -X importtime`), each with its own time.

    .venv/bin/python benchmarks/check_speed.py [--pairs 10]

check is timed as a user runs it: from a regular install (pip, not editable: no import hook, its bytecode compiled)
of this checkout and Click in a throw-away venv of the same Python; beside it, from this venv as it is (the editable
install's finder, or PYTHONPATH). Each pair runs the three back to back as fresh processes, so all see the same
machine state; `import torch` runs in this venv. The load average is printed with each pair.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["-m", "shmdoctor", "check", "--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]
GOAL = 0.05
# Bytecode is written and read as a user's Python does (a session that sets PYTHONDONTWRITEBYTECODE would time the
# compiling of this checkout's every module).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def install(where: Path) -> str:
    """A venv at `where` with this checkout (pip install, not editable) and this venv's Click; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", where / "venv"], check=True)
    python = str(where / "venv" / "bin" / "python")
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True
    ).stdout.strip()
    src = where / "src"  # a copy: the build's egg-info and build/ go there, not into the checkout
    shutil.copytree(ROOT / "shmdoctor", src / "shmdoctor", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src)
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    subprocess.run([*pip, "--target", site, str(src)], check=True, env=ENV)
    shutil.copytree(Path(click.__file__).parent, Path(site) / "click", ignore=shutil.ignore_patterns("__pycache__"))
    compileall.compile_dir(Path(site) / "click", quiet=1)
    return python


def imported(argv: list[str]) -> dict[str, int]:
    """Module -> its own import time in microseconds, from `python -X importtime`."""
    err = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, env=ENV).stderr
    rows = [line[len("import time:") :].split("|") for line in err.splitlines() if line.startswith("import time:")]
    return {name.strip(): int(own) for own, _, name in rows[1:]}


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - start


def summary(name: str, ratios: list[float]) -> str:
    median = statistics.median(ratios)
    verdict = "met" if median <= GOAL else "NOT met"
    return f"{name}: median ratio {median:.3f}, worst {max(ratios):.3f} (goal <= {GOAL}: {verdict})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=10)
    pairs = ap.parse_args().pairs
    with tempfile.TemporaryDirectory(prefix="check-speed-") as tmp:
        python = install(Path(tmp))
        installed, here, torch = [python, *ARGS], [sys.executable, *ARGS], [sys.executable, "-c", "import torch"]
        for argv in (installed, here, torch):
            wall(argv)  # warm the page cache (and write this checkout's bytecode)
        print(f"check installed: {python} (pip install of this checkout, not editable)")
        print(f"check here: {sys.executable} (this venv as it is)")
        heads = ("pair", "load", "installed s", "here s", "import torch s", "ratio", "here")
        print("  ".join(f"{h:>{w}}" for h, w in zip(heads, (4, 5, 11, 7, 14, 6, 6))))
        ratios: list[float] = []
        ratios_here: list[float] = []
        for i in range(pairs):
            load = os.getloadavg()[0]
            a, b, t = wall(installed), wall(here), wall(torch)
            ratios.append(a / t)
            ratios_here.append(b / t)
            print(f"{i + 1:>4}  {load:5.1f}  {a:11.3f}  {b:7.3f}  {t:14.3f}  {a / t:6.3f}  {b / t:6.3f}")
        print(summary("check as installed", ratios))
        print(summary("check from this venv", ratios_here))
        base = imported([python, "-c", "import click"])
        own = {name: us for name, us in imported(installed).items() if name not in base}
    total = sum(own.values()) / 1000
    print(f"imported by check beyond Python's start and Click, installed ({len(own)}, {total:.1f} ms own time):")
    print("  " + ", ".join(f"{name} {us / 1000:.1f}" for name, us in own.items()))


if __name__ == "__main__":
    main()
