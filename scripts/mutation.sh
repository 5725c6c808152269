#!/usr/bin/env bash
# Mutation testing of the pure core, outside CI (cosmic-ray lists the mutants: pip install -e '.[mutation]'): a full
# run takes hours on 2 cores, so it goes module by module (or on more cores: docs/development.md). Each mutant is
# applied to a copy of the tree (the checkout is never touched) and the module's own unit tests run against it; the
# report (score, then every survivor with its diff) goes to docs/mutation/<module>.txt. scripts/mutation.py does it.
#
#   nice -n 19 bash scripts/mutation.sh sizes capacity   # the named modules (one chunk each)
#   nice -n 19 bash scripts/mutation.sh                   # all of them
#   nice -n 19 bash scripts/mutation.sh --retest capacity # the report's survivors again, against today's tests
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
if [ "${1:-}" = --retest ]; then shift; exec "$PY" scripts/mutation.py retest "$@"; fi
rm -f .mutation/results.json
"$PY" scripts/mutation.py plan "$@"
"$PY" scripts/mutation.py run --jobs "${JOBS:-2}"
"$PY" scripts/mutation.py report
