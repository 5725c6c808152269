#!/usr/bin/env bash
# Mutation testing of the pure core with cosmic-ray (pip install -e '.[mutation]'), outside CI: a full run takes hours
# on 2 cores, so it goes module by module. Each mutant is applied to a copy of the working tree (the checkout is never
# touched) and the module's own unit tests run against it; the report (score, then every survivor with its diff)
# goes to docs/mutation/<module>.txt. docs/mutation.md keeps the scores and why each listed survivor is equivalent.
#
#   nice -n 19 bash scripts/mutation.sh sizes capacity   # the named modules (one chunk each)
#   nice -n 19 bash scripts/mutation.sh                   # all of them, in the order below
#   nice -n 19 bash scripts/mutation.sh --retest capacity # the report's survivors again, against today's tests
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")  # absolute (not resolved: the venv's own)
CR=$(dirname "$PY")/cosmic-ray

# module -> the unit tests that exercise it (a mutant one of them fails is killed; the fast lane's slow files stay out)
declare -A TESTS=(
  [sizes]="tests/unit/test_sizes.py tests/unit/test_capacity.py tests/unit/test_loader.py tests/unit/test_consumers.py tests/unit/test_workload.py tests/unit/test_rules.py"
  [capacity]="tests/unit/test_capacity.py tests/unit/test_rules.py tests/unit/test_workload.py"
  [loader]="tests/unit/test_loader.py tests/unit/test_options.py tests/unit/test_rules.py tests/unit/test_workload.py"
  [consumers]="tests/unit/test_consumers.py tests/unit/test_workload.py tests/unit/test_rules.py"
  [shm/removal]="tests/unit/shm tests/unit/commands/test_clean.py"
  [render/metrics]="tests/unit/render/test_metrics.py tests/unit/exporter"
  [workload]="tests/unit/test_workload.py tests/unit/probe/test_workload.py tests/unit/test_rules.py"
  [model]="tests/unit/test_model.py tests/unit/test_rules.py tests/unit/test_workload.py tests/unit/render tests/unit/test_api.py"
  [fixes]="tests/unit/test_fixes.py tests/unit/test_properties.py tests/unit/test_rules.py tests/unit/render tests/unit/commands/test_lint.py"
  [rules]="tests/unit/test_rules.py tests/unit/test_rules_bench.py tests/unit/test_workload.py tests/unit/render"
  [diagnose/judge]="tests/unit/diagnose"
  [diagnose/scan]="tests/unit/diagnose"
  [diagnose/catalogue]="tests/unit/diagnose"
  [diagnose/clues]="tests/unit/diagnose"
)
ORDER=(sizes capacity loader consumers shm/removal render/metrics workload model fixes rules diagnose/judge
  diagnose/scan diagnose/catalogue diagnose/clues)
RETEST=
if [ "${1:-}" = --retest ]; then RETEST=1; shift; fi
[ $# -gt 0 ] && ORDER=("$@")

[ -x "$CR" ] || { echo "no cosmic-ray beside $PY: $(dirname "$PY")/pip install -e '.[mutation]'" >&2; exit 2; }
mkdir -p docs/mutation
for module in "${ORDER[@]}"; do
  [ -n "${TESTS[$module]:-}" ] || { echo "unknown module: $module (one of ${ORDER[*]})" >&2; exit 2; }
  if [ -n "$RETEST" ]; then  # each survivor's diff applied to a copy of the tree, the module's tests run on it
    "$PY" - "docs/mutation/${module//\//.}.txt" ${TESTS[$module]} <<'EOF' | tee "docs/mutation/${module//\//.}.retest.txt"
import os, re, subprocess, sys, tempfile

report, tests = sys.argv[1], sys.argv[2:]
blocks = re.split(r"\n(?=--- survived: )", open(report).read())[1:]
lines, killed, retested = [], 0, 0
for block in blocks:
    block = block.split("\n--- equivalent")[0]
    diff = block.split("--- mutation diff ---\n", 1)[1]
    hunk = re.search(r"^@@ -(\d+)", diff, re.M)
    body = [x for x in diff[hunk.end() :].split("\n")[1:] if x[:1] in (" ", "-", "+")]
    old, new = [x[1:] for x in body if x[:1] in " -"], [x[1:] for x in body if x[:1] in " +"]
    removed = next((x[1:] for x in body if x[:1] == "-"), "")
    if "BitOr" in block.splitlines()[0] and re.match(r"\s*(def |\w+: )", removed):
        continue  # an annotation: equivalent (reports made since skip them before the run)
    with tempfile.TemporaryDirectory() as work:
        tree = "git ls-files -co --exclude-standard -z | tar --null -cf - -T - | tar -xf - -C " + work
        subprocess.run(tree, shell=True, check=True)
        path = os.path.join(work, re.search(r"^\+\+\+ b/(\S+)", diff, re.M).group(1))
        source, start = open(path).read().split("\n"), int(hunk.group(1)) - 1
        while start + len(old) > len(source) and old[-1] == new[-1] == "":  # cosmic-ray's hunks end past EOF
            old.pop(), new.pop()
        if source[start : start + len(old)] != old:  # the module changed since the run: the same lines, elsewhere
            start = next((i for i in range(len(source)) if source[i : i + len(old)] == old), -1)
        if start < 0:
            lines.append("CHANGED  " + block.splitlines()[0][len("--- survived: ") :])  # no longer in the module
            continue
        source[start : start + len(old)] = new
        open(path, "w").write("\n".join(source))
        pytest = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
        env = {**os.environ, "PYTHONPATH": work}
        failed = subprocess.run(pytest, cwd=work, env=env, capture_output=True, timeout=300).returncode != 0
    killed += failed
    retested += 1
    lines.append(("killed   " if failed else "SURVIVED ") + block.splitlines()[0][len("--- survived: ") :])
changed = sum(line.startswith("CHANGED") for line in lines)
print(f"{report}: {killed} of {retested} survivors now killed by today's tests ({changed} no longer in the module)")
print("\n".join(lines))
EOF
    continue
  fi
  work=$(mktemp -d /tmp/shmdoctor-mutation.XXXXXX)
  git ls-files -co --exclude-standard -z | tar --null -cf - -T - | tar -xf - -C "$work"
  cat >"$work/mutation.toml" <<EOF
[cosmic-ray]
module-path = "shmdoctor/$module.py"
timeout = 90.0  # a mutant that loops forever; one run takes ~5 s here
excluded-modules = []
test-command = "$PY -m pytest -x -q -p no:cacheprovider -m 'not docker and not torch' ${TESTS[$module]}"

[cosmic-ray.distributor]
name = "local"
EOF
  out="docs/mutation/${module//\//.}.txt"
  echo "== $module: $(date -u +%H:%M) -> $out"
  (
    cd "$work"
    export PYTHONPATH=$work
    "$CR" init mutation.toml session.sqlite
    # `int | None` made `int & None` in an annotation: under `from __future__ import annotations` a string nobody
    # evaluates (mypy checks it in CI): equivalent, skipped before the run and counted apart
    "$PY" - "shmdoctor/$module.py" <<'EOF'
import re, sqlite3, sys

source = open(sys.argv[1]).read().splitlines()
db = sqlite3.connect("session.sqlite")
specs = db.execute("SELECT job_id, operator_name, start_pos_row FROM mutation_specs").fetchall()
for job, op, row in specs:
    if "BitOr" in op and re.match(r"\s*(def |\w+: )", source[row - 1]):
        db.execute(
            "INSERT INTO work_results (worker_outcome, output, test_outcome, diff, job_id) VALUES (?, ?, ?, ?, ?)",
            ("SKIPPED", "equivalent: an annotation", None, "", job),
        )
db.commit()
EOF
    # the tests pass unmutated, or no score means anything
    "$PY" -m pytest -x -q -p no:cacheprovider -m 'not docker and not torch' ${TESTS[$module]} >&2
    start=$(date +%s)
    "$CR" exec mutation.toml session.sqlite
    "$PY" - "$module" "$(($(date +%s) - start))" "${TESTS[$module]}" <<'EOF'
import sqlite3, sys

module, seconds, tests = sys.argv[1:]
db = sqlite3.connect("session.sqlite")
rows = db.execute(
    "SELECT m.operator_name, m.occurrence, m.start_pos_row, r.test_outcome, r.diff, r.worker_outcome "
    "FROM mutation_specs m "
    "JOIN work_results r ON r.job_id = m.job_id ORDER BY m.start_pos_row"
).fetchall()


survived = [r for r in rows if str(r[3]).lower().endswith("survived")]
equivalent = [r for r in rows if r[5] == "SKIPPED"]
live = survived
scored = len(rows) - len(equivalent)
killed = scored - len(live)
print(
    f"shmdoctor/{module}.py: {killed} of {scored} mutants killed ({100 * killed / max(scored, 1):.1f}%), "
    f"{len(live)} survived, {len(equivalent)} equivalent (annotations) left out of {len(rows)}; {seconds} s; "
    f"tests: {tests}"
)
for op, occurrence, line, _, diff, _ in live:
    print(f"\n--- survived: line {line}, {op} #{occurrence}\n{diff}")
for op, occurrence, line, *_ in equivalent:
    print(f"--- equivalent (annotation): line {line}, {op} #{occurrence}")
EOF
  ) >"$work.report"  # docs/ gets it whole, once done (scripts/docs_pages.py lists every file there)
  mv "$work.report" "$out"
  head -1 "$out"
  rm -rf "$work"
done
