"""lint --fix's in-place writing (edit/inplace.py) against the round trip through ruamel.yaml it stands in for:
on compose files made of the shapes users write (each quoting of shm_size, a comment after it, a block or flow
environment, a tmpfs list, an anchor, a merge key, blank lines and comments between services, CRLF), --diff is
the round trip's byte for byte wherever the in-place path writes, and the common file is written in place."""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shmdoctor.cli import main
from shmdoctor.edit import inplace
from tests.helpers import DATA

LOADER = ["--batch-size", "100", "--num-workers", "4", "--sample-bytes", "1MiB"]  # 1536m
SHM = ["", "64m", "'64m'", '"64m"', "67108864", "'64m'   # too small", "64m # small", "&s 64m", "${SHM:-64m}", "2g"]
MEMORY = ["", "    mem_limit: 1g\n", "    deploy:\n      resources:\n        limits:\n          memory: 1g\n"]
TAIL = [
    "",
    "    environment:\n      RANK: '0'\n",
    "    environment: {RANK: '0'}\n",
    "    environment:\n      - RANK=0\n",
    "    command: >\n      python train.py\n",
    "    environment:\n      RANK: '0'\n      # more to come\n",
    "    tmpfs:\n      - /dev/shm:size=64m\n",
    "    <<: *common\n",
]
BETWEEN = ["", "\n", "# next\n", "\n  # the next one\n"]


@st.composite
def compose_files(draw) -> str:
    count = draw(st.integers(min_value=1, max_value=4))
    text = "x-common: &common\n  image: pytorch/pytorch\n  shm_size: 64m\n" if draw(st.booleans()) else ""
    text += "services:\n"
    for i in range(count):
        shm = draw(st.sampled_from(SHM))
        text += f"  train{i}:\n    image: pytorch/pytorch\n" + (f"    shm_size: {shm}\n" if shm else "")
        text += draw(st.sampled_from(MEMORY)) + draw(st.sampled_from(TAIL)) + draw(st.sampled_from(BETWEEN))
    if "*common" in text and "&common" not in text:
        text = text.replace("    <<: *common\n", "")
    return text.replace("\n", "\r\n") if draw(st.booleans()) else text


def diff(path: Path, fast: bool, monkeypatch) -> tuple[str, str]:
    """lint --diff's patch and its lines on stderr, with the in-place path or with the round trip alone."""
    with monkeypatch.context() as patched:
        if not fast:
            patched.setattr(inplace, "rewrite", lambda *_: None)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(["lint", str(path), "--diff", *LOADER])
    return out.getvalue(), err.getvalue()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=compose_files())
def test_where_it_writes_in_place_it_writes_what_the_round_trip_writes(text, monkeypatch):
    written = []
    real = inplace.rewrite
    monkeypatch.setattr(inplace, "rewrite", lambda *a: written.append(real(*a)) or written[-1])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "compose.yml"
        path.write_bytes(text.encode())
        fast = diff(path, True, monkeypatch)
        if written and written[-1] is not None:
            assert fast == diff(path, False, monkeypatch)


@pytest.mark.parametrize(
    "text",
    [
        "services:\n  t:\n    image: pytorch/pytorch\n    shm_size: '64m'   # too small\n    environment: {A: b}\n",
        "services:\n  t:\n    image: pytorch/pytorch\n    environment:\n      A: b\n      # kept above\n\n# next\n",
        'services:\r\n  t:\r\n    image: pytorch/pytorch\r\n    shm_size: "64m"\r\n',
        "services:\n  t: {image: pytorch/pytorch, shm_size: 64m}\n",
        "services:\n  t:\n    image: pytorch/pytorch\n    tmpfs:\n      - /dev/shm:size=64m\n",
    ],
    ids=["quoted-with-comment", "added-under-a-comment", "crlf-double-quoted", "flow", "tmpfs"],
)
def test_the_common_shapes_are_written_in_place_as_the_round_trip_writes_them(tmp_path, monkeypatch, text):
    written = []
    real = inplace.rewrite
    monkeypatch.setattr(inplace, "rewrite", lambda *a: written.append(real(*a)) or written[-1])
    path = tmp_path / "compose.yml"
    path.write_bytes(text.encode())
    fast = diff(path, True, monkeypatch)
    assert written and written[-1] is not None  # written in place, no round trip
    assert fast == diff(path, False, monkeypatch) and "+    " in fast[0] or "+  t:" in fast[0]


def test_an_anchor_a_merge_key_and_a_duplicate_key_go_through_the_round_trip(tmp_path, monkeypatch):
    written = []
    real = inplace.rewrite
    monkeypatch.setattr(inplace, "rewrite", lambda *a: written.append(real(*a)) or written[-1])
    for text in (
        "services:\n  t: &t\n    image: pytorch/pytorch\n",
        "x: &c\n  image: pytorch/pytorch\nservices:\n  t:\n    <<: *c\n",
        "services:\n  t:\n    image: pytorch/pytorch\n    shm_size: &s 64m\n",
        "services:\n  t:\n    image: pytorch/pytorch\n    image: pytorch/pytorch\n",
    ):
        (tmp_path / "compose.yml").write_text(text)
        diff(tmp_path / "compose.yml", True, monkeypatch)
    assert written == [None] * 4


def test_a_manifest_is_walked_once_for_all_its_pods(tmp_path, monkeypatch):
    """Each target's edit walked every document of its file again: a manifest of 2,000 pods, 4,000,000 walks."""
    from shmdoctor.probe import kubernetes

    walked = []
    real = kubernetes.placed
    monkeypatch.setattr(kubernetes, "placed", lambda doc: walked.append(doc.index) or real(doc))
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {{name: p{}}}\nspec:\n  containers:\n  - name: c\n    image: x/torch\n"
    path = tmp_path / "pods.yaml"
    path.write_text("---\n".join(pod.format(i) for i in range(20)))
    out = diff(path, True, monkeypatch)[0]
    assert out.count("+    - mountPath: /dev/shm") + out.count("+      mountPath: /dev/shm") == 20  # each pod fixed
    assert sorted(walked) == list(range(20))  # each document once: the volumes and mounts added in place


REAL = sorted(p for p in (DATA / "real").glob("*.y*ml") if p.suffix in (".yml", ".yaml"))


def test_real_files_written_in_place_are_written_as_the_round_trip_writes_them(monkeypatch, tmp_path):
    """The corpus' real compose files, manifests and jobs (a volume and its mount added, a list grown, a value
    replaced): where the in-place path writes and the round trip writes too, byte for byte the same patch."""
    written = []
    real = inplace.rewrite
    monkeypatch.setattr(inplace, "rewrite", lambda *a: written.append(real(*a)) or written[-1])
    compared = 0
    for source in REAL:
        path = tmp_path / source.name
        path.write_bytes(source.read_bytes())
        written.clear()
        fast = diff(path, True, monkeypatch)
        if any(w is not None for w in written):
            slow = diff(path, False, monkeypatch)
            assert fast == slow or not slow[0], source.name  # or the round trip could not place it
            compared += bool(slow[0])
    assert compared >= 20


@st.composite
def manifests(draw) -> str:
    """Pods and Jobs as people write them: a dash under its key or indented, mounts and volumes there or not, block or
    flow, comments after the last item at any indent, limits or none."""
    dash = draw(st.sampled_from(["", "  "]))
    docs = []
    for i in range(draw(st.integers(min_value=1, max_value=3))):
        job = draw(st.booleans())
        pad = "    " if job else ""
        spec = f"{pad}spec:\n" if not job else "spec:\n  template:\n    spec:\n"
        body = f"apiVersion: {'batch/v1' if job else 'v1'}\nkind: {'Job' if job else 'Pod'}\nmetadata:\n  name: p{i}\n"
        body += spec + f"{pad}  containers:\n"
        for c in range(draw(st.integers(min_value=1, max_value=2))):
            item = f"{pad}  {dash}- name: c{c}\n{pad}  {dash}  image: pytorch/pytorch\n"
            inner = f"{pad}  {dash}  "
            item += draw(
                st.sampled_from(
                    [
                        "",
                        f"{inner}resources:\n{inner}  limits:\n{inner}    memory: 1Gi\n",
                        f"{inner}resources: {{limits: {{memory: 1Gi}}}}\n",
                        f"{inner}volumeMounts:\n{inner}{dash}- name: data\n{inner}{dash}  mountPath: /data\n",
                        f"{inner}volumeMounts: [{{name: data, mountPath: /data}}]\n",
                        f"{inner}command: [python, train.py]  # the job\n",
                    ]
                )
            )
            item += draw(st.sampled_from(["", f"{inner}# about c{c}\n", f"{pad}  # the next container\n", "\n"]))
            body += item
        body += draw(
            st.sampled_from(
                [
                    "",
                    f"{pad}  volumes:\n{pad}  {dash}- name: data\n{pad}  {dash}  emptyDir: {{}}\n",
                    f"{pad}  volumes: [{{name: data, emptyDir: {{}}}}]\n",
                    f"{pad}  restartPolicy: Never\n",
                ]
            )
        )
        docs.append(body + draw(st.sampled_from(["", "# end\n", "\n"])))
    return "---\n".join(docs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=manifests())
def test_manifests_written_in_place_are_written_as_the_round_trip_writes_them(text, monkeypatch):
    written = []
    real = inplace.rewrite
    monkeypatch.setattr(inplace, "rewrite", lambda *a: written.append(real(*a)) or written[-1])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pods.yaml"
        path.write_text(text)
        fast = diff(path, True, monkeypatch)
        if written and written[-1] is not None:
            slow = diff(path, False, monkeypatch)
            assert fast == slow or not slow[0]
