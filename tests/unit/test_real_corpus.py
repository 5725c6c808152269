"""The real-file corpus (tests/data/real/, each file's source in its README.md): what lint says of each file is what
tests/data/real/expected.yaml wrote of it from the file and the operators' rules before lint ran on it. The same
policy for real failure texts (tests/data/explain/fourth-pass.yaml, fifth-pass.yaml): what explain says of each text
pasted on this machine is what its thread established, written before explain read it."""

from __future__ import annotations

import pytest
import yaml

from benchmarks.explain_corpus import pasted, scored
from shmdoctor.errors import UsageError
from shmdoctor.fleet import lint
from shmdoctor.sizes import parse_quantity
from tests.helpers import DATA

REAL = DATA / "real"
EXPECTED = yaml.safe_load((REAL / "expected.yaml").read_text())


def _lint(path: str):
    return lint((path,), swarm=None)


@pytest.mark.parametrize("case", EXPECTED, ids=[c["file"] for c in EXPECTED])
def test_lint_says_of_each_real_file_what_was_expected_before_it_ran(case):
    path = str(REAL / case["file"])
    try:
        doc = _lint(path)
    except UsageError as e:  # nothing in it to judge (a template, a .pod unit), or bad input: said why, no report
        assert str(e).startswith(path) and case["verdict"] in ("ok", "error") and case["targets"] == 0, str(e)
        return
    assert case["verdict"] != "error", "judged a file expected to be refused"
    names = {r.facts.target.name.split(":", 1)[1]: r for r in doc.reports}
    assert (doc.verdict, len(doc.reports)) == (case["verdict"], case["targets"]), {
        n: (r.verdict, [f.id for f in r.findings]) for n, r in names.items()
    }
    for name, size in (case.get("shm") or {}).items():
        expected = None if size is None else parse_quantity(size.replace("MiB", "Mi"))
        assert names[name].facts.shm.size_bytes == expected, name


def test_the_corpus_has_every_file_with_its_source():
    listed = (REAL / "README.md").read_text()
    files = {c["file"] for c in EXPECTED}
    assert len(files) == len(EXPECTED) >= 40
    for name in files:
        assert (REAL / name).is_file() and f"`{name}`" in listed, name


def test_the_whole_corpus_is_judged_in_one_run():
    doc = _lint(str(REAL))
    refused = sorted(str(REAL / c["file"]) for c in EXPECTED if c["verdict"] == "error")
    assert sorted(e.split(":", 1)[0] for e in doc.errors) == refused
    assert len(doc.reports) >= sum(c["targets"] for c in EXPECTED)


FOURTH = yaml.safe_load((DATA / "explain" / "fourth-pass.yaml").read_text())
# The texts explain read wrongly as pasted on a host at 267cac4 (main, before issue 35's reading of the place, the
# other consumers and the general reader), and those it blamed on /dev/shm once the place became evidence (6693372):
# expected failures; after that work landed (f9381a1) the list keeps only what still misses, strict; after the
# general reader (issue 35 item 2) three texts are left, each without an errno, a signal or a known text: a leak told
# in prose (authentik), MPI crashing "at random points" beside a 64MB /dev/shm (batch-shipyard), "running out of
# memory because 64MB wasn't enough" (chapel).
MISSED_BEFORE_35 = frozenset(
    {
        "https://github.com/goauthentik/authentik/issues/25876",
        "https://github.com/Azure/batch-shipyard/issues/8",
        "https://github.com/chapel-lang/chapel/pull/15692",
    }
)


FIFTH = yaml.safe_load((DATA / "explain" / "fifth-pass.yaml").read_text())
# the fifth pass's texts explain read wrongly at 039cbf3 (main, measured when the harvest came in), strict; after the
# general reader (issue 35 item 2) the 9 it still misses: billiard's and authentik's leaks told by their titles only,
# a traceback cut before its error (imposm2), Open MPI's mmap words without an errno, a Bus error in prose, a bare
# NCCL system error (kaito), '/dev/smh'; kubernetes#71233 (initdb's Bus error that was huge pages) is read since
# initdb's smallest shared_buffers put it off /dev/shm (reader.py's elsewhere contexts).
MISSED_IN_FIFTH = frozenset(
    {
        "https://github.com/celery/billiard/issues/293",
        "https://github.com/celery/billiard/issues/5",
        "https://github.com/goauthentik/authentik/issues/16386",
        "https://github.com/omniscale/imposm2/issues/9",
        "https://github.com/open-mpi/ompi/issues/12784",
        "https://github.com/sgl-project/sglang/pull/38638",
        "https://github.com/kaito-project/kaito/pull/1102",
        "https://github.com/opendatahub-io/kubeflow/issues/111",
    }
)


@pytest.mark.parametrize(
    "case", FOURTH + FIFTH, ids=[c["source"].removeprefix("https://github.com/") for c in FOURTH + FIFTH]
)
def test_explain_says_of_each_real_text_pasted_here_what_its_thread_established(case, request):
    """benchmarks/explain_corpus.py --as-pasted, one text: the real CLI on stdin, on this machine's /dev/shm."""
    if case["source"] in MISSED_BEFORE_35 | MISSED_IN_FIFTH:
        request.applymarker(pytest.mark.xfail(reason="issue 35: misread as pasted on a host", strict=True))
    result = pasted(case)
    assert result["right"], result


HELDOUT_4 = yaml.safe_load((DATA / "explain" / "heldout-4.yaml").read_text())
# Scored once held out (f9381a1: 15 of 30), then read for the general reader: kept since, what still misses strict.
# karma-chrome-launcher#154 says only "Headless Chrome times out": no crash, no errno, nothing of /dev/shm.
MISSED_HELDOUT_4 = frozenset({"https://github.com/karma-runner/karma-chrome-launcher/issues/154"})


HELDOUT_5 = yaml.safe_load((DATA / "explain" / "heldout-5.yaml").read_text())
# Scored once held out (c0b4e85: 19 of 31, 2 false blames), then read for its kinds of evidence: kept since, what still
# misses strict. spartan#369 says "Bus error (core dumped) model share memory" and a df: nothing names PyTorch (the
# consumer); d2-docker#97 is DHIS2's "Analytics table process failed: java.lang.RuntimeException": nothing of
# PostgreSQL's shared memory in it.
MISSED_HELDOUT_5 = frozenset(
    {
        "https://github.com/RobotLocomotion/spartan/issues/369",
        "https://github.com/EyeSeeTea/d2-docker/pull/97",
    }
)


SIXTH = [c for c in yaml.safe_load((DATA / "explain" / "sixth-pass.yaml").read_text()) if scored(c)]
# The sixth pass's kept two thirds (another helper's harvest, its labels read in the schema's values by the scorer's
# in_schema): scored as pasted before any change (37 of 62), then read for its kinds of evidence; what still misses,
# strict, each because the text cannot show it or its label says otherwise than its thread:
MISSED_IN_SIXTH = frozenset(
    {
        # a bare worker death the thread found was the machine's RAM (Colab; AGEM's own memory): the same words are
        # /dev/shm's in other threads
        "https://github.com/zylo117/Yet-Another-EfficientDet-Pytorch/issues/586",
        "https://github.com/ContinualAI/avalanche/issues/841",
        # "Chrome failed to start: crashed." where /dev/shm lacked its execute bit: nothing of a permission said
        "https://github.com/SeleniumHQ/docker-selenium/issues/1309",
        # the kubelet's eviction of the "dshm" emptyDir: read, but nothing names PostgreSQL (the chart's)
        "https://github.com/helm/charts/issues/24458",
        # labelled shm-missing; its thread (and explain) say systemd-logind's RemoveIPC deleted the segment
        "https://github.com/bnnanet/serviceman/issues/5",
        # NCCL's own segment error inside vLLM is named NCCL's (its dose NCCL's); the thread names vLLM, and the
        # resource tracker's leak warning after the crash is read as a leak of its own
        "https://github.com/vllm-project/vllm/issues/6689",
        # Selenium's "invalid session id" alone: the browser gone, not why
        "https://github.com/alphagov/govuk-docker/pull/613",
        # an ls of joblib's pools in /dev/shm and a traceback cut before its error: no failure said
        "https://github.com/joblib/joblib/issues/198",
    }
)


HELDOUT_6 = [c for c in yaml.safe_load((DATA / "explain" / "heldout-6.yaml").read_text()) if scored(c)]
# Scored once held out (4738a00: 21 of 29, 2 false blames: ChromeDriver's start failures), then read for its kinds of
# evidence; what still misses, strict:
MISSED_HELDOUT_6 = frozenset(
    {
        # UCX's "No resources are available" through MPICH: nothing of /dev/shm in the text
        "https://github.com/pmodels/mpich/issues/7321",
        # a bare NCCL system error inside vLLM: ambiguous by design (issue 35 item 6), the thread's NCCL_DEBUG log not
        # pasted
        "https://github.com/MiniMax-AI/MiniMax-01/issues/42",
        # Chromium's FATAL hint alone: the same words are electron/electron#30758's seccomp sandbox (not /dev/shm)
        "https://github.com/weiameili/Pensela/issues/29",
        # read as shm-space with the 1 GiB it names, but nothing on its lines names Oracle (the consumer)
        "https://github.com/testcontainers/testcontainers-java/issues/952",
    }
)


SEVENTH = [c for c in yaml.safe_load((DATA / "explain" / "seventh-pass.yaml").read_text()) if scored(c)]
# The seventh pass's kept two thirds as scored before any change for them (40 of 69); what still misses, strict (each
# entry removed as its kind of evidence is read, or kept with why the text cannot show it):
MISSED_IN_SEVENTH = frozenset(
    {
        # Ray's note that its object store fell back to /tmp for a 64 MiB /dev/shm, read as shm-space; the death was
        # host RAM (every TP worker loading its shard at once), which no line of the text says
        "https://github.com/vllm-project/vllm/issues/322",
        # a bare NCCL 'unhandled system error': ambiguous by design (issue 35 item 6), no NCCL_DEBUG log pasted
        "https://github.com/NVIDIA/nccl/issues/473",
        # Triton's region 'to requested size' with ENOENT: the catalogue's shm-missing (aws/sagemaker-python-sdk#2801,
        # the same words); that a 256Mi emptyDir fixed it is the thread's
        "https://github.com/kserve/modelmesh-serving/issues/78",
        # EFAULT from madvise of vLLM's offload region in /dev/shm: the leaked region of an earlier crash that
        # filled it is the thread's finding, no line says it
        "https://github.com/vllm-project/vllm/issues/54002",
        # DeepSpeed's rank killed (-9) with host RAM full: read as an OOM kill (memory-limit), the thread's host RAM
        # (not-shm) needs the place, which the text does not give
        "https://github.com/hiyouga/LlamaFactory/issues/4629",
        # a bus error SGLang's scheduler died of, read as SGLang's shm-space: that its segments leaked across CI
        # jobs until /dev/shm was full is the thread's finding, no word of the text says it
        "https://github.com/sgl-project/sglang/pull/28089",
        # EMFILE of Python's SharedMemory read by PyTorch's bare Errno 24 text as the DataLoader's, and the resource
        # tracker's leak warning after it read as a leak (labelled so in harvested.yaml's vllm#8933)
        "https://github.com/SuperDARNCanada/borealis/issues/344",
        # UCX's 'No resources are available' creating a worker: nothing of /dev/shm in the text (as mpich#7321)
        "https://github.com/NVIDIA/cudf-spark/issues/6572",
        # LMDB's ENOENT: read as its own mapped files; the thread found its POSIX semaphores (sem_open) in a sandbox
        # without /dev/shm, which no word of the text names
        "https://github.com/tangramdotdev/tangram/pull/1065",
        # ENOENT creating a Fast DDS segment: the thread's cause is a /dev/shm filled by leftover segments, which the
        # errno does not say (no space, no count of segments)
        "https://github.com/eProsima/Fast-DDS/issues/2790",
        # X's MIT-SHM refused across the IPC namespace: System V segments the X server attaches, read (as shmget is)
        # as not /dev/shm
        "https://github.com/suchja/wine/issues/8",
        # a traceback cut before its error: no errno, nothing of AWS Lambda or a semaphore
        "https://github.com/pola-rs/polars/issues/16675",
        # prose of a /dev/shm filling over hours and the prometheus multiprocess folder: a leak told in a user's
        # words, not yet read
        "https://github.com/goauthentik/authentik/issues/10768",
        # "No decoder found" and the user's --shm-size=256m that solved it: no failure of shared memory said
        "https://github.com/jcsilva/docker-kaldi-gstreamer-server/issues/6",
        # Slurm's cgroup OOM kill, read (as every OOM kill with nothing of the place) as a memory limit /dev/shm may
        # count in; the thread's was the worker's own vector in a 5M job
        "https://github.com/ropensci/drake/issues/813",
        # MPICH's 'KILLED BY SIGNAL: 7 (Bus error)' with no shared-memory word: the leaked cmx* files are the thread's
        "https://github.com/GlobalArrays/ga/issues/160",
        # PyTriton's 'Stub process is not healthy' alone: no word of shared memory or a signal
        "https://github.com/triton-inference-server/pytriton/issues/37",
        # ENOENT reopening a shared tensor in the pin-memory thread, read as no /dev/shm (the catalogue's ambiguous
        # torch-shm-missing); the file_system strategy's cleanup race is the maintainer's analysis
        "https://github.com/KatherLab/MediSwarm/issues/574",
        # ENOSPC writing gunicorn's pidfile: nothing in the text says the file was in /dev/shm
        "https://github.com/goauthentik/authentik/issues/12230",
        # sem_open's ENOSPC read as shm-space; the leak (a semaphore every 10 minutes never removed) is the thread's
        # count of files, not the text's, and its consumer is Apache's C module, named multiprocessing by sem_open
        "https://github.com/OpenIDC/liboauth2/issues/18",
    }
)


# The held-out thirds once scored, and the sixth pass's kept two thirds: each text as its thread established, what
# still misses strict (each list above says why)
KEPT = HELDOUT_4 + HELDOUT_5 + SIXTH + HELDOUT_6 + SEVENTH
CANNOT_SHOW = MISSED_HELDOUT_4 | MISSED_HELDOUT_5 | MISSED_IN_SIXTH | MISSED_HELDOUT_6 | MISSED_IN_SEVENTH


@pytest.mark.parametrize("case", KEPT, ids=[c["source"].removeprefix("https://github.com/") for c in KEPT])
def test_explain_says_of_each_text_kept_since_its_scoring_what_its_thread_established(case, request):
    if case["source"] in CANNOT_SHOW:
        request.applymarker(pytest.mark.xfail(reason="the text cannot show it", strict=True))
    result = pasted(case)
    assert result["right"], result


def test_the_fourth_pass_states_each_text_with_its_thread_and_cause():
    assert len(FOURTH) >= 60 and len({c["source"] for c in FOURTH}) == len(FOURTH)
    for c in FOURTH:
        assert c["source"].startswith("https://github.com/") and c["text"].strip() and c["stated"].strip(), c
        assert c["cause"] in ("shm-space", "shm-missing", "shm-leak", "not-shm", "none"), c["source"]
        assert ("consumer" in c) == (c["cause"] != "none"), c["source"]
    assert {c["source"] for c in FOURTH} >= MISSED_BEFORE_35


def test_the_fifth_pass_states_each_text_with_its_source_and_cause():
    assert len(FIFTH) >= 60 and not {c["source"] for c in FIFTH} & {c["source"] for c in FOURTH}
    for c in FIFTH:
        assert c["source"].startswith("https://") and c["text"].strip() and c["stated"].strip(), c
    assert {c["source"] for c in FIFTH} >= MISSED_IN_FIFTH
