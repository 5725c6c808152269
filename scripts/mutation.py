"""Mutation testing of the pure core, outside CI, in three steps that can run on different machines:

    python scripts/mutation.py plan [MODULE...]   # cosmic-ray (pip install -e '.[mutation]') lists every mutant
                                                  # and its diff: .mutation/plan.json
    python scripts/mutation.py run [--jobs N]     # each mutant against its module's unit tests, N at a time, each
                                                  # worker in its own copy of the tree; needs only pytest:
                                                  # .mutation/results.json, kept after every mutant (a second run
                                                  # goes on where the first stopped)
    python scripts/mutation.py report             # docs/mutation/<module>.txt: the score, every survivor's diff
    python scripts/mutation.py retest MODULE...   # a report's survivors against today's tests

scripts/mutation.sh runs the first three here. docs/mutation.md keeps the scores, why each listed survivor is
equivalent, and how to run a chunk on a machine of more cores.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".mutation"

# every unit test of diagnose, then explain's and the log probe's; the bounds on hostile logs (test_catalogue_linear,
# 3 of the 5 s) last, so that a mutant the others kill costs 2
DIAGNOSE = (
    "tests/unit/commands/test_explain_cli.py tests/unit/probe/test_logs.py "
    + " ".join(
        sorted(
            f"tests/unit/diagnose/{p.name}"
            for p in (ROOT / "tests/unit/diagnose").glob("test_*.py")
            if "linear" not in p.name
        )
    )
    + " tests/unit/diagnose/test_catalogue_linear.py"
)
# module -> the unit tests that exercise it (a mutant one of them fails is killed; the fast lane's slow files stay out)
TESTS = {
    "sizes": "tests/unit/test_sizes.py tests/unit/test_capacity.py tests/unit/test_loader.py "
    "tests/unit/test_consumers.py tests/unit/test_workload.py tests/unit/test_rules.py",
    "capacity": "tests/unit/test_capacity.py tests/unit/test_rules.py tests/unit/test_workload.py",
    "loader": "tests/unit/test_loader.py tests/unit/test_options.py tests/unit/test_rules.py "
    "tests/unit/test_workload.py",
    "consumers": "tests/unit/test_consumers.py tests/unit/test_workload.py tests/unit/test_rules.py",
    "shm/removal": "tests/unit/shm tests/unit/commands/test_clean.py",
    "render/metrics": "tests/unit/render/test_metrics.py tests/unit/exporter",
    "workload": "tests/unit/test_workload.py tests/unit/probe/test_workload.py tests/unit/test_rules.py",
    "model": "tests/unit/test_model.py tests/unit/test_rules.py tests/unit/test_workload.py tests/unit/render "
    "tests/unit/test_api.py",
    "fixes": "tests/unit/test_fixes.py tests/unit/test_properties.py tests/unit/test_rules.py tests/unit/render "
    "tests/unit/commands/test_lint.py",
    "rules": "tests/unit/test_rules.py tests/unit/test_rules_bench.py tests/unit/test_workload.py tests/unit/render",
    **dict.fromkeys(("diagnose/judge", "diagnose/scan", "diagnose/catalogue", "diagnose/clues"), DIAGNOSE),
    # issue 39: the modules that touch users' files, processes and networks
    **dict.fromkeys(
        ("edit/__init__", "edit/editors", "edit/inplace", "edit/matching", "edit/patch"),
        "tests/unit/edit tests/unit/test_fixes.py tests/unit/commands/test_lint.py",
    ),
    # the process lane needs neither engine nor torch: --fix's writes and run's signals are tested there, for real
    "edit/write": "tests/unit/edit tests/unit/test_fixes.py tests/unit/commands/test_lint.py "
    "tests/integration/process/test_fix_writes.py",
    **dict.fromkeys(
        ("render/sarif", "render/github", "render/escape"), "tests/unit/render tests/unit/test_suppress.py"
    ),
    **dict.fromkeys(
        ("exporter/collect", "exporter/serve", "exporter/inventory", "exporter/model"),
        "tests/unit/exporter tests/unit/render/test_metrics.py",
    ),
    "probe/ecs": "tests/unit/probe/test_ecs.py tests/unit/probe/test_definitions_as_run.py",
    "probe/docker": "tests/unit/probe/test_docker.py tests/unit/probe/test_engine_socket.py "
    "tests/unit/probe/test_layering.py",
    **dict.fromkeys(
        ("wrap/instrument", "wrap/session"),
        "tests/unit/wrap tests/integration/process/test_run_transparent.py tests/integration/process/test_child.py",
    ),
    "wrap/ring": "tests/unit/wrap",
    **dict.fromkeys(("shm/segments", "shm/creations", "shm/sampling"), "tests/unit/shm"),
    "postmortem": "tests/unit/test_postmortem_container.py tests/unit/test_postmortem_log.py "
    "tests/unit/commands/test_explain_cli.py "
    "tests/unit/diagnose/test_place.py "
    "tests/unit/diagnose/test_judge_fixes.py",
    "options": "tests/unit/test_options.py tests/unit/commands",
    **dict.fromkeys(("bench/plan", "bench/sweep", "bench/document", "bench/status", "bench/stop"), "tests/unit/bench"),
    "render/forms": "tests/unit/render/test_forms.py tests/unit/test_fixes.py tests/unit/test_rules.py",
    "wrap/child": "tests/unit/wrap tests/unit/render/test_run_counts.py tests/integration/process/test_child.py",
    "fleet": "tests/unit/probe/test_docker.py tests/unit/probe/test_engine_socket.py tests/unit/test_selection.py "
    "tests/unit/render tests/unit/test_served.py",
}
# the lanes that need neither engine nor torch: the fast lane and the process lane (marked docker too: CI's lane)
PYTEST = ["-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-m", "(process or not docker) and not torch"]
COPIED = ("shmdoctor", "tests", "examples", "docs", "benchmarks", "scripts", "pyproject.toml", "README.md")


def report_name(module: str) -> Path:
    return ROOT / "docs" / "mutation" / (module.replace("/", ".") + ".txt")


def plan(modules: list[str]) -> None:
    """Every mutant cosmic-ray's operators make of each module, as line edits and the diff a report shows."""
    import cosmic_ray.plugins
    from cosmic_ray.commands.init import _all_work_items
    from cosmic_ray.mutating import _make_diff, mutate_code

    jobs = []
    for module in modules:
        path = f"shmdoctor/{module}.py"
        source = (ROOT / path).read_text()
        lines = source.split("\n")
        for item in _all_work_items([ROOT / path], {}):
            spec = item.mutations[0]
            operator = cosmic_ray.plugins.get_operator(spec.operator_name)(**spec.operator_args)
            try:
                mutated = mutate_code(source, operator, spec.occurrence)
            except AttributeError:  # cosmic-ray 8.7's ExceptionReplacer on `except (a.B, C)`: a mutant it cannot make
                print(f"{module}: {spec.operator_name} {spec.occurrence}: not made (cosmic-ray)", file=sys.stderr)
                continue
            if mutated is None:
                continue
            new = mutated.split("\n")
            edits = [
                (i1, i2, new[j1:j2])
                for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, lines, new, autojunk=False).get_opcodes()
                if tag != "equal"
            ]
            row = spec.start_pos[0]
            jobs.append(
                {
                    "id": f"{module}:{spec.operator_name}:{spec.occurrence}",
                    "module": module,
                    "path": path,
                    "operator": spec.operator_name,
                    "occurrence": spec.occurrence,
                    "line": row,
                    "edits": edits,
                    "diff": "\n".join(_make_diff(source, mutated, path)),
                    # `int | None` made `int & None` in an annotation (a def's, a name's or an attribute's: `self.x:
                    # T = ...`): under `from __future__ import annotations` a string nobody evaluates (mypy checks it
                    # in CI): equivalent, left out of the run and counted apart
                    "equivalent": "BitOr" in spec.operator_name
                    and bool(re.match(r"\s*(def |[\w.]+: )", lines[row - 1])),
                }
            )
        print(f"{module}: {sum(j['module'] == module for j in jobs)} mutants", file=sys.stderr)
    sources = {m: (ROOT / f"shmdoctor/{m}.py").read_text() for m in modules}  # a run refuses a module changed since
    STATE.mkdir(exist_ok=True)
    (STATE / "plan.json").write_text(
        json.dumps({"tests": {m: TESTS[m] for m in modules}, "sources": sources, "jobs": jobs})
    )


def copy_tree(dest: Path) -> None:
    for name in COPIED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)


def pytest(tree: Path, tests: str, timeout: float, said: list[str] | None = None) -> str:
    """A mutant's outcome; what pytest said last appended to `said`, where given."""
    # no bytecode written: a mutant of the same size in the same second would otherwise reuse a stale .pyc
    path = os.pathsep.join(filter(None, (str(tree), os.environ.get("PYTHONPATH"))))  # the tree, then wheels carried
    env = {**os.environ, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        done = subprocess.run(
            [sys.executable, *PYTEST, *tests.split()], cwd=tree, env=env, capture_output=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return "timeout"
    if said is not None:
        said.append(done.stdout.decode(errors="replace")[-2000:])
    return "survived" if done.returncode == 0 else "killed"


def run(jobs_wanted: int, results_path: Path, reverse: bool = False) -> None:
    """Each mutant not yet in results_path, jobs_wanted at a time; the results file is rewritten after each."""
    planned = json.loads((STATE / "plan.json").read_text())
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    changed = [m for m, source in planned["sources"].items() if (ROOT / f"shmdoctor/{m}.py").read_text() != source]
    if changed:  # the mutants are line edits of the planned source
        sys.exit(f"shmdoctor/{changed[0]}.py changed since the plan: plan it again")
    todo = [j for j in planned["jobs"] if not j["equivalent"] and j["id"] not in results]
    work = Path(tempfile.mkdtemp(prefix="shmdoctor-mutation."))
    work.chmod(0o755)  # the process lane runs --fix as nobody (setpriv): it must read the tree
    trees = [work / f"w{i}" for i in range(max(1, jobs_wanted))]
    for tree in trees:
        copy_tree(tree)
    for tree in trees:  # every module's bytecode once: a mutant then compiles only its own
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "shmdoctor")], check=True)
    limits: dict[str, float] = {}
    said: dict[str, list[str]] = {m: [] for m in planned["tests"]}

    def baseline(module: str, tree: Path) -> None:  # unmutated, the tests pass, or no score means anything
        start = time.monotonic()
        limits[module] = -1 if pytest(tree, planned["tests"][module], 600, said[module]) != "survived" else 0
        limits[module] = limits[module] or max(30.0, 10 * (time.monotonic() - start))

    checks = [
        threading.Thread(target=baseline, args=(m, trees[i % len(trees)])) for i, m in enumerate(planned["tests"])
    ]
    for t in checks:
        t.start()
    for t in checks:
        t.join()
    for module in [m for m, limit in limits.items() if limit < 0]:  # the others run on
        print(f"{module}: its tests fail unmutated, left out:\n{''.join(said[module])}", file=sys.stderr)
        todo = [j for j in todo if j["module"] != module]
    pending: queue.Queue = queue.Queue()
    for job in reversed(todo) if reverse else todo:
        pending.put(job)
    lock, started, done = threading.Lock(), time.monotonic(), [0]

    def worker(tree: Path) -> None:
        while True:
            try:
                job = pending.get_nowait()
            except queue.Empty:
                return
            target = tree / job["path"]
            pristine = target.read_text()
            lines = pristine.split("\n")
            for i1, i2, new in reversed(job["edits"]):
                lines[i1:i2] = new
            target.write_text("\n".join(lines))
            for stale in (target.parent / "__pycache__").glob(target.stem + ".*.pyc"):
                stale.unlink()
            t0 = time.monotonic()
            outcome = pytest(tree, planned["tests"][job["module"]], limits[job["module"]])
            target.write_text(pristine)
            with lock:
                results[job["id"]] = {"outcome": outcome, "seconds": round(time.monotonic() - t0, 2)}
                results_path.write_text(json.dumps(results))
                done[0] += 1
                if done[0] % 50 == 0:
                    print(f"{done[0]}/{len(todo)} in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)

    threads = [threading.Thread(target=worker, args=(tree,)) for tree in trees]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    shutil.rmtree(work)
    print(f"{done[0]} mutants in {time.monotonic() - started:.0f} s with {len(trees)} workers", file=sys.stderr)


def report(results_path: Path) -> None:
    planned = json.loads((STATE / "plan.json").read_text())
    results = json.loads(results_path.read_text())
    for module, tests in planned["tests"].items():
        jobs = sorted((j for j in planned["jobs"] if j["module"] == module), key=lambda j: (j["line"], j["id"]))
        equivalent = [j for j in jobs if j["equivalent"]]
        ran = [j for j in jobs if j["id"] in results]
        survived = [j for j in ran if results[j["id"]]["outcome"] == "survived"]
        seconds = sum(results[j["id"]]["seconds"] for j in ran)
        killed, missing = len(ran) - len(survived), len(jobs) - len(equivalent) - len(ran)
        head = (
            f"shmdoctor/{module}.py: {killed} of {len(ran)} mutants killed ({100 * killed / max(len(ran), 1):.1f}%), "
            f"{len(survived)} survived, {len(equivalent)} equivalent (annotations) left out of {len(jobs)}"
            + (f", {missing} not run yet" if missing else "")
            + f"; {seconds:.0f} s of tests; tests: {tests}"
        )
        body = [f"\n--- survived: line {j['line']}, {j['operator']} #{j['occurrence']}\n{j['diff']}" for j in survived]
        body += [
            f"--- equivalent (annotation): line {j['line']}, {j['operator']} #{j['occurrence']}" for j in equivalent
        ]
        report_name(module).parent.mkdir(parents=True, exist_ok=True)
        report_name(module).write_text("\n".join([head, *body]) + "\n")
        print(head)


def _locate(source: list[str], old: list[str], new: list[str], start: int) -> int:
    """Where a hunk's lines are in today's module: as they were, else the same lines nearest; where an edit since
    the run changed its context, with less context (old and new trimmed alike, in place), down to the mutated lines
    alone; -1 where those are gone."""
    while True:
        found = [i for i in range(len(source) - len(old) + 1) if source[i : i + len(old)] == old]
        if found:
            return min(found, key=lambda i: abs(i - start))
        if len(old) > 1 and len(new) > 1 and old[0] == new[0]:
            del old[0], new[0]
            start += 1
        elif len(old) > 1 and len(new) > 1 and old[-1] == new[-1]:
            del old[-1], new[-1]
        else:
            return -1


def retest(modules: list[str], lines_wanted: range | None = None) -> None:
    """Each survivor's diff in a module's report applied to a copy of today's tree, the module's tests run on it
    (those of lines_wanted alone, when given: the report is then printed, not kept)."""
    for module in modules:
        name = report_name(module)
        blocks = re.split(r"\n(?=--- survived: )", name.read_text())[1:]
        lines, killed, retested = [], 0, 0
        for block in blocks:
            block = block.split("\n--- equivalent")[0]
            if lines_wanted and int(re.match(r"--- survived: line (\d+)", block).group(1)) not in lines_wanted:  # type: ignore[union-attr]
                continue
            diff = block.split("--- mutation diff ---\n", 1)[1]
            hunk = re.search(r"^@@ -(\d+)", diff, re.M)
            assert hunk, block
            body = [x for x in diff[hunk.end() :].split("\n")[1:] if x[:1] in (" ", "-", "+")]
            old, new = [x[1:] for x in body if x[:1] in " -"], [x[1:] for x in body if x[:1] in " +"]
            with tempfile.TemporaryDirectory() as work:
                os.chmod(work, 0o755)  # readable by nobody, as run's trees
                copy_tree(Path(work))
                path = Path(work) / re.search(r"^\+\+\+ b/(\S+)", diff, re.M).group(1)  # type: ignore[union-attr]
                source, start = path.read_text().split("\n"), int(hunk.group(1)) - 1
                while start + len(old) > len(source) and old[-1] == new[-1] == "":  # hunks end past EOF
                    old.pop(), new.pop()
                start = _locate(source, old, new, start)
                title = block.splitlines()[0][len("--- survived: ") :]
                if start < 0:
                    lines.append("CHANGED  " + title)  # no longer in the module
                    continue
                source[start : start + len(old)] = new
                path.write_text("\n".join(source))
                failed = pytest(Path(work), TESTS[module], 300) != "survived"
            killed += failed
            retested += 1
            lines.append(("killed   " if failed else "SURVIVED ") + title)
        changed = sum(line.startswith("CHANGED") for line in lines)
        text = f"{name.relative_to(ROOT)}: {killed} of {retested} survivors now killed by today's tests "
        text += f"({changed} no longer in the module)\n" + "\n".join(lines) + "\n"
        if not lines_wanted:
            name.with_suffix(".retest.txt").write_text(text)
        print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=["plan", "run", "report", "retest"])
    parser.add_argument("modules", nargs="*", help=f"of {', '.join(TESTS)} (plan: all by default)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="mutants tested at a time (run)")
    parser.add_argument("--reverse", action="store_true", help="the plan's last mutants first (run: two machines)")
    parser.add_argument("--lines", help="retest: survivors on these lines of the module alone, as FIRST-LAST")
    parser.add_argument("--results", type=Path, default=STATE / "results.json", help="the run's results file")
    args = parser.parse_args()
    unknown = [m for m in args.modules if m not in TESTS]
    if unknown:
        parser.error(f"unknown module {unknown[0]} (one of {', '.join(TESTS)})")
    if args.step == "plan":
        plan(args.modules or list(TESTS))
    elif args.step == "run":
        run(args.jobs, args.results, args.reverse)
    elif args.step == "report":
        report(args.results)
    else:
        first, _, last = (args.lines or "").partition("-")
        retest(args.modules, range(int(first), int(last or first) + 1) if args.lines else None)


if __name__ == "__main__":
    main()
