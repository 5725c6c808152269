"""How long `shmdoctor check` takes next to `python -c "import torch"`, pair by pair (goal, issue 27: at most 0.05
of it), and what check imports beyond Python's start and Click (`python -X importtime`), each with its own time.

    .venv/bin/python benchmarks/check_speed.py [--pairs 10]

check is timed as a user runs it: the `shmdoctor` script of a regular install (pip, not editable: no import hook,
the bytecode compiled) of this checkout, with Click's files copied from this venv and compiled (nothing is
downloaded), in a throw-away venv of the same Python; beside it, `python -m shmdoctor` from this venv as it is (the
editable install's finder, or PYTHONPATH). Each pair runs them and `import torch` (in this venv) back to back as
fresh processes, so all see the same machine state, with Python's start and `import click` in the throw-away venv:
what check costs beyond them. The load average is printed with each pair.
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
ALONE = {k: v for k, v in ENV.items() if k != "PYTHONPATH"}  # the throw-away venv's: its own install, nothing else


def install(where: Path) -> tuple[str, str]:
    """A venv at `where` with this checkout (pip install, not editable) and this venv's Click: its python, and the
    `shmdoctor` script pip wrote (run by that python, as its #! line would in the venv pip installs into)."""
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
    return python, str(Path(site) / "bin" / "shmdoctor")


def imported(argv: list[str]) -> dict[str, int]:
    """Module -> its own import time in microseconds, from `python -X importtime` in the throw-away venv."""
    err = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, env=ALONE).stderr
    rows = [line[len("import time:") :].split("|") for line in err.splitlines() if line.startswith("import time:")]
    return {name.strip(): int(own) for own, _, name in rows[1:]}


def wall(argv: list[str], env: dict[str, str] = ENV) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
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
        python, script = install(Path(tmp))
        installed, here = [python, script, *ARGS[2:]], [sys.executable, *ARGS]
        torch = [sys.executable, "-c", "import torch"]
        start, click_ = [python, "-c", "pass"], [python, "-c", "import click"]  # what check cannot do without
        runs = {"installed": installed, "here": here, "torch": torch, "start": start, "click": click_}
        env = {name: ENV if name in ("here", "torch") else ALONE for name in runs}
        for name, argv in runs.items():
            wall(argv, env[name])  # warm the page cache (and write this checkout's bytecode)
        print(f"installed: {script} (pip install of this checkout, not editable), run by {python}")
        print(f"here: {sys.executable} -m shmdoctor (this venv as it is)")
        heads = ("pair", "load", "installed ms", "here ms", "import torch ms", "ratio", "here")
        print("  ".join(f"{h:>{w}}" for h, w in zip(heads, (4, 5, 12, 7, 15, 6, 6))))
        times: dict[str, list[float]] = {name: [] for name in runs}
        for i in range(pairs):
            load = os.getloadavg()[0]
            for name, argv in runs.items():
                times[name].append(wall(argv, env[name]) * 1000)
            a, b, t = times["installed"][-1], times["here"][-1], times["torch"][-1]
            print(f"{i + 1:>4}  {load:5.1f}  {a:12.1f}  {b:7.1f}  {t:15.0f}  {a / t:6.3f}  {b / t:6.3f}")
        print(summary("check as installed", [a / t for a, t in zip(times["installed"], times["torch"])]))
        print(summary("check from this venv", [b / t for b, t in zip(times["here"], times["torch"])]))
        median = {name: statistics.median(v) for name, v in times.items()}
        print(
            f"check as installed, median {median['installed']:.1f} ms: Python's start {median['start']:.1f} ms "
            f"(python -c pass), Click {median['click'] - median['start']:.1f} ms more (python -c 'import click'), "
            f"shmdoctor's imports and run {median['installed'] - median['click']:.1f} ms"
        )
        base = imported(click_)
        own = {name: us for name, us in imported(installed).items() if name not in base}
    total = sum(own.values()) / 1000
    print(f"imported by check beyond Python's start and Click, installed ({len(own)}, {total:.1f} ms own time):")
    print("  " + ", ".join(f"{name} {us / 1000:.1f}" for name, us in own.items()))


if __name__ == "__main__":
    main()
