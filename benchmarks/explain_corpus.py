"""explain against real failure texts: the cause and consumer each text gives, the verdict where its user ran it, and
the dose it prescribes there. The oracle is each case's own `cause` (what its thread says), never the catalogue.

    .venv/bin/python benchmarks/explain_corpus.py tests/data/explain/harvested.yaml [more.yaml ...] [--misses]
    .venv/bin/python benchmarks/explain_corpus.py --as-pasted tests/data/explain/fourth-pass.yaml [--misses]

A case is a dict: source, text, cause (a cause, a list, `none`, or `not-shm`: the place proves it is not /dev/shm),
consumer, optional bytes_needed, optional where: {shm: SIZE, memory: SIZE, form: docker|kubernetes} (what the thread
says the job had). Each text is judged as a user reads it on another machine (explain's place is evidence: this
machine's facts never enter), twice: pasted as it is (the place what the text says, or unknown), and with the place
its thread states given as `--shm-size` / `--where` (a case without `where`: as pasted). Scores:

- cause: the text's causes and consumers are the stated ones (`not-shm` cases: the verdict where it ran says so);
- verdict pasted: the shared-memory causes left are the stated ones; a `not-shm` the place proves (BasicSR#59's 64
  GiB) may stay shm-space on the condition it says ("if /dev/shm where it ran was …"), never unconditionally;
- verdict where it ran: with the place stated, the shared-memory causes left are the stated ones (none for `none` /
  `not-shm`; an OOM kill where no memory limit applies counts as the stated memory-limit);
- dose (cases stated shm-space or shm-missing): the first fix is a size in the place's own form (--shm-size=…,
  an emptyDir sizeLimit), above the /dev/shm it had and every size the text names, at least NCCL's two-rank need
  for NCCL; `asks` where no number can be known and the fix says the one thing to give for it.

--as-pasted reads each text as its user pastes it (issue 35): the real CLI, `shmdoctor explain --format json` with the
text on stdin, on this machine, whatever its /dev/shm; nothing of the thread's place is given. Scores:

- right: the shared-memory causes of its diagnoses are the stated ones (none for `none` / `not-shm`), with the stated
  consumer, and the exit code says the same (1 for a shared-memory death, 0 else);
- missed: a stated shared-memory death read as none or not shared memory; false blame: a `none` / `not-shm` text
  given a shared-memory cause;
- dose (cases stated shm-space): the sizes its error findings' fixes name are above the /dev/shm the thread says it
  had (else Docker's 64 MiB) and every size the text names, and at least NCCL's two-rank need for NCCL: `number`;
  `asks` where no fix names a size.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from shmdoctor.diagnose import CONSUMERS, SHM_CAUSES, judge, scan_text
from shmdoctor.diagnose.judge import LOADER_SIZE, NCCL_TWO, SIZED_BY
from shmdoctor.diagnose.place import Place, elsewhere
from shmdoctor.model import Facts
from shmdoctor.render import forms
from shmdoctor.sizes import parse_size
from tests.helpers import forked_cli


def _listed(value) -> list[str]:
    return sorted(value if isinstance(value, list) else [value])


# A harvest's labels in the schema's words (the sixth pass's harvest wrote its own): a cause or a consumer the schema
# names otherwise is read as the schema's; a consumer it has no value for can only be said `unknown` (a value added
# to the schema is then named); a case whose thread established no cause (`unknown`) is not scored
CAUSE_WORDS = {"shm-permission": "shm-missing", "leaked": "shm-leak"}
CONSUMER_WORDS = {"torch-multiprocessing": "dataloader", "electron": "chromium", "selenium": "chromium"}


def scored(case: dict) -> bool:
    return case["cause"] != "unknown"


def in_schema(case: dict) -> dict:
    """The case with its cause and consumer in the schema's values."""
    out = {**case, "cause": [CAUSE_WORDS.get(c, c) for c in _listed(case["cause"])]}
    if "consumer" in case:
        named = (CONSUMER_WORDS.get(c, c) for c in _listed(case["consumer"]))
        out["consumer"] = sorted({c if c in CONSUMERS else "unknown" for c in named})
    return out


def _verdict(d) -> str:
    """A diagnosis's cause where it ran; an OOM kill where no memory limit applies stays an OOM kill (the judge says
    the machine's OOM killer, not /dev/shm: the cause a thread states as 'out of memory')."""
    if d.cause == "not-shm" and d.reason.startswith("no memory limit applies here"):
        return "memory-limit"
    return d.cause


def stated(where: dict | None, clues) -> Place:
    """The place a thread states, as a user gives it: --shm-size, --where kubernetes."""
    where = where or {}
    shm = parse_size(str(where["shm"])) if "shm" in where else None
    return elsewhere(clues, shm, "kubernetes" if where.get("form") == "kubernetes" else None)


def _judged(ex) -> list[str]:
    return sorted({_verdict(d) for d in ex.diagnoses} - {"not-shm", "ambiguous"}) or ["none"]


def score(case: dict) -> dict:
    case = in_schema(case)
    scanner = scan_text(case["text"])
    found = scanner.diagnoses()
    want = _listed(case["cause"])
    pasted = judge(found, elsewhere(scanner.clues), clues=scanner.clues)
    there = stated(case.get("where"), scanner.clues)
    ex = judge(found, there, clues=scanner.clues)
    facts = there.facts
    judged = _judged(ex)
    want_shm = [c for c in want if c in SHM_CAUSES] or ["none"]
    conditional = want == ["not-shm"] and all(d.reason.startswith("if ") for d in pasted.shm_diagnoses)
    out = {"source": case["source"], "verdict": judged == want_shm, "got": judged, "dose": "-"}
    out["pasted"] = _judged(pasted) == want_shm or conditional
    if want == ["not-shm"]:
        out["cause"] = out["verdict"]
    else:
        causes = sorted({d.cause for d in found}) or ["none"]
        consumers = sorted({d.consumer for d in found})
        out["cause"] = causes == want and ("consumer" not in case or consumers == _listed(case["consumer"]))
        if "bytes_needed" in case:
            out["cause"] &= {d.bytes_needed for d in found if d.bytes_needed} == {case["bytes_needed"]}
        out["text"] = causes
    if {"shm-space", "shm-missing"} & set(want):
        out["dose"] = dose(ex, facts, case)
    return out


def dose(ex, facts: Facts, case: dict) -> str:
    top = next((f for f in ex.report.findings if f.severity == "error"), None)
    if top is None or not top.fixes:
        return "none"
    fix = top.fixes[0]
    floor = max(facts.shm.size_bytes or 0, case.get("bytes_needed", 0))
    if any(d.consumer == "nccl" for d in ex.shm_diagnoses):
        floor = max(floor, NCCL_TWO - 1)
    said = " ".join(forms.statements(fix, facts))
    if fix.shm_bytes and fix.shm_bytes > floor and ("--shm-size=" in said or "sizeLimit" in said):
        return "number"
    if fix.shm_bytes:
        return f"wrong ({fix.shm_bytes} B, {said!r})"
    asks = fix.summary.startswith(
        (*SIZED_BY.values(), LOADER_SIZE)
    )  # the one thing to give (the loader's: what the log left)
    return "asks" if asks else f"no number ({fix.summary!r})"


def pasted(case: dict) -> dict:
    """One text as its user pastes it into `shmdoctor explain` on this machine (the real CLI, JSON)."""
    case = in_schema(case)
    proc = forked_cli("explain", "--format", "json", input_text=case["text"], timeout=120)
    out = {"source": case["source"], "code": proc.returncode}
    if proc.returncode not in (0, 1):
        return {**out, "right": False, "got": [f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}"], "dose": "-"}
    doc = json.loads(proc.stdout)
    shm = [d for d in doc["diagnoses"] if d["cause"] in SHM_CAUSES]
    got = sorted({d["cause"] for d in shm}) or ["none"]
    want = [c for c in _listed(case["cause"]) if c in SHM_CAUSES] or ["none"]
    consumers = sorted({d["consumer"] for d in shm})
    right = got == want and proc.returncode == (want != ["none"])
    if want != ["none"] and "consumer" in case:
        right &= consumers == _listed(case["consumer"])
    out.update(right=right, got=got, consumers=consumers, missed=want != ["none"] and got == ["none"])
    out["false_blame"] = want == ["none"] and got != ["none"]
    out["dose"] = pasted_dose(doc, case) if "shm-space" in want else "-"
    return out


def pasted_dose(doc: dict, case: dict) -> str:
    sizes = [
        fix["shm_bytes"]
        for finding in doc["findings"]
        if finding["severity"] == "error"
        for fix in finding["fixes"]
        if fix["shm_bytes"]
    ]
    if not sizes:
        return "asks"
    floor = max(parse_size(str((case.get("where") or {}).get("shm", "64m"))), case.get("bytes_needed", 0))
    if case.get("consumer") == "nccl":
        floor = max(floor, NCCL_TWO - 1)
    return "number" if min(sizes) > floor else f"wrong ({min(sizes)} B)"


def report_pasted(path: Path, misses: bool) -> None:
    every = yaml.safe_load(path.read_text())
    cases = [in_schema(c) for c in every if scored(c)]
    results = [pasted(c) for c in cases]
    n = len(results)
    deaths = [
        r
        for r, c in zip(results, cases, strict=True)
        if {"shm-space", "shm-missing", "shm-leak"} & set(_listed(c["cause"]))
    ]
    others = [r for r, c in zip(results, cases, strict=True) if _listed(c["cause"]) in (["none"], ["not-shm"])]
    doses = [r["dose"] for r in results if r["dose"] != "-"]
    unscored = f" ({len(every) - n} unscored: no cause established)" if len(every) > n else ""
    print(
        f"{path} (as pasted here): {n} texts{unscored}; "
        f"right {sum(r['right'] for r in results)}/{n}; "
        f"shared-memory deaths missed {sum(r['missed'] for r in deaths)}/{len(deaths)}; "
        f"false blame {sum(r['false_blame'] for r in others)}/{len(others)}; "
        f"dose {doses.count('number')}/{len(doses)} a size above what failed, {doses.count('asks')} ask"
    )
    if misses:
        for r in results:
            if not r["right"] or r["dose"] not in ("-", "number", "asks"):
                got = f"{r['got']} {r.get('consumers', '')}"
                print(f"  MISS {r['source'][:70]}: got {got} exit {r['code']} dose {r['dose']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--misses", action="store_true", help="print each case that misses")
    parser.add_argument("--as-pasted", action="store_true", help="read each text as pasted on this machine (the CLI)")
    args = parser.parse_args(argv)
    for path in args.files:
        if args.as_pasted:
            report_pasted(path, args.misses)
            continue
        results = [score(c) for c in yaml.safe_load(path.read_text()) if scored(c)]
        n = len(results)
        cause = sum(r["cause"] for r in results)
        verdict = sum(r["verdict"] for r in results)
        pasted = sum(r["pasted"] for r in results)
        doses = [r["dose"] for r in results if r["dose"] != "-"]
        number, asks = doses.count("number"), doses.count("asks")
        print(
            f"{path}: {n} texts; cause {cause}/{n}; verdict pasted {pasted}/{n}; verdict where it ran {verdict}/{n}; "
            f"dose {number}/{len(doses)} a size in the target's form, {asks} ask the one thing they need"
        )
        if args.misses:
            for r in results:
                if not (r["cause"] and r["verdict"] and r["pasted"]) or r["dose"] not in ("-", "number", "asks"):
                    print(
                        f"  MISS {r['source'][:70]}: text {r.get('text')} verdict {r['got']} pasted {r['pasted']} "
                        f"dose {r['dose']}"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
