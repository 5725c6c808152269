"""Properties of the parsers (hypothesis): what goes in as text comes out as the same value, and any other input
is a UsageError (a one-line message), never another exception."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from shmdoctor import fixes
from shmdoctor.cli import main
from shmdoctor.errors import UsageError
from shmdoctor.limits import MAX_PREFETCH, MAX_WORKERS
from shmdoctor.loader import LoaderSpec, loader_config, requirement
from shmdoctor.model import Facts, Ipc, Memory, Shm, Target
from shmdoctor.probe.compose import interpolate
from shmdoctor.probe.documents import parse
from shmdoctor.probe.mountinfo import parse_line
from shmdoctor.sizes import (
    KiB,
    MiB,
    TiB,
    docker_size,
    format_size,
    k8s_quantity,
    nice_size,
    parse_quantity,
    parse_size,
)

sizes = st.integers(min_value=1, max_value=64 * TiB)


def _one_line_usage_error(call, *args, **kwargs):
    """call() returns, or raises UsageError with a one-line message: nothing else escapes."""
    try:
        return call(*args, **kwargs)
    except UsageError as e:
        assert str(e) and "\n" not in str(e)
        return None


# --- sizes --------------------------------------------------------------------------------------------------------


@given(sizes)
def test_docker_spelling_round_trips(n):
    assert parse_size(docker_size(n)) == n


@given(sizes)
def test_kubernetes_spelling_round_trips(n):
    assert parse_quantity(k8s_quantity(n)) == n


@given(sizes)
def test_printed_sizes_read_back_within_their_rounding(n):
    # format_size keeps 2-3 significant digits: reading the text back lands within 5% (one decimal of 1.0-9.9).
    back = parse_size(format_size(n))
    assert abs(back - n) <= 0.05 * n + 1


@given(st.integers(min_value=1, max_value=TiB))
def test_nice_size_is_the_least_step_at_or_above(n):
    nice = nice_size(n)
    assert nice >= n and nice % MiB == 0
    assert nice_size(nice) == nice  # a step is its own rounding


@given(
    st.integers(min_value=1, max_value=10**6),
    st.sampled_from(["", "b", "k", "m", "g", "K", "M", "G", "kib", "MiB", "GB", "Gi", "ki"]),
)
def test_parse_size_units(number, unit):
    factor = {"": 1, "b": 1, "k": KiB, "m": MiB, "g": 1024**3}[unit[:1].lower()]
    assert parse_size(f"{number}{unit}") == number * factor


@given(st.text(max_size=20))
def test_parse_size_of_any_text_is_a_size_or_a_usage_error(text):
    value = _one_line_usage_error(parse_size, text, what="--sample-bytes")
    assert value is None or value > 0


@given(st.text(max_size=20))
def test_parse_quantity_of_any_text_is_a_quantity_or_a_usage_error(text):
    value = _one_line_usage_error(parse_quantity, text)
    assert value is None or value >= 0


# --- mountinfo lines ----------------------------------------------------------------------------------------------


def _kernel_escape(path: str) -> str:
    """As the kernel's mangle_path (show_mountinfo): space, tab, newline and backslash as octal escapes."""
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in path)


paths = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), min_size=1, max_size=40).map(
    lambda s: "/" + s
)
words = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=12)


@given(
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    paths,
    paths,
    words,
    st.lists(words, max_size=3),
    words,
    paths,
    st.lists(words, max_size=4),
)
def test_mountinfo_line_round_trips(mount_id, parent, root, point, opts, optional, fstype, source, super_opts):
    assume("-" not in (opts, fstype, *optional))  # the kernel writes a lone "-" only as the separator
    line = " ".join(
        [
            str(mount_id),
            str(parent),
            "0:42",
            _kernel_escape(root),
            _kernel_escape(point),
            opts,
            *optional,
            "-",
            fstype,
            _kernel_escape(source),
            ",".join(super_opts) or "rw",
        ]
    )
    m = parse_line(line + "\n")
    assert (m.mount_id, m.parent_id, m.root, m.mount_point, m.fstype, m.source) == (
        mount_id,
        parent,
        root,
        point,
        fstype,
        source,
    )
    assert m.options == tuple(opts.split(","))


@given(st.text(max_size=120))
def test_any_text_is_a_mount_or_a_usage_error(text):
    _one_line_usage_error(parse_line, text)


# --- loader specs (a container's label, a workload's annotation) --------------------------------------------------

loaders = st.fixed_dictionaries(
    {"batch_size": st.integers(1, 4096)},
    optional={
        "num_workers": st.integers(0, 64),
        "prefetch_factor": st.integers(1, 16),
        "sample_bytes": st.integers(1, 2**30),
        "pin_memory": st.booleans(),
        "ranks": st.integers(1, 16),
    },
)


@given(loaders, st.sampled_from([",", ", ", " , "]))
def test_loader_spec_round_trips(spec, sep):
    def written(key, value):
        return str(value).lower() if isinstance(value, bool) else docker_size(value) if key == "sample_bytes" else value

    text = sep.join(f"{k}={written(k, v)}" for k, v in spec.items())
    assert LoaderSpec.parse(text) == LoaderSpec(**spec)


@given(loaders)
def test_a_parsed_spec_is_a_loader_or_a_usage_error_and_its_need_is_the_formula(spec):
    config = _one_line_usage_error(loader_config, **{"sample_bytes": "1MiB", **spec})
    if config is None:  # prefetch_factor without workers: PyTorch refuses it too
        assert spec.get("prefetch_factor") and not spec.get("num_workers")
        return
    need = requirement(config)
    in_flight = config.prefetch_factor * config.num_workers + (0 if config.pin_memory or not config.num_workers else 1)
    assert need.bytes == in_flight * config.batch_bytes * config.ranks


@given(
    st.integers(1, MAX_WORKERS),
    st.integers(1, MAX_PREFETCH),
    st.booleans(),
    st.integers(1, 64),
    st.integers(1, 2**20),
    sizes,
)
def test_what_fits_today_is_the_largest_setting_that_fits(workers, prefetch, pin, ranks, batch_kib, shm_size):
    """Each knob turned down alone, to the largest value whose need (the formula) fits in the headroom: one more
    would not. Closed form: as fast for 4096 workers as for 4."""
    base = dict(batch_size=1, num_workers=workers, prefetch_factor=prefetch, pin_memory=pin, ranks=ranks)
    need = requirement(loader_config(**base, sample_bytes=batch_kib * KiB))
    facts = Facts(Target("local", "t"), Shm(True, shm_size, 0, shm_size, "docker-shm"), Ipc("private"), Memory(None, 0))
    usable = int(shm_size * fixes.HEADROOM)

    def fits(**change) -> bool:
        return requirement(loader_config(**{**base, **change}, sample_bytes=batch_kib * KiB)).bytes <= usable

    for fix in fixes.fit_today(need, facts):
        ((knob, value),) = fix.loader.items()
        if knob == "num_workers" and value:
            assert fits(num_workers=value) and (value == workers - 1 or not fits(num_workers=value + 1))
        if knob == "prefetch_factor":
            assert fits(prefetch_factor=value) and (value == prefetch - 1 or not fits(prefetch_factor=value + 1))


@given(st.text(max_size=80))
def test_any_spec_text_is_a_spec_or_a_usage_error(text):
    _one_line_usage_error(LoaderSpec.parse, text)


# --- manifests and compose files ----------------------------------------------------------------------------------

# Any JSON-like value, for a field where a manifest author may put the wrong type.
values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10**10) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _lint(body) -> None:
    """The whole of `shmdoctor lint FILE`, in this process: any exception but the ones main() maps escapes."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "generated.json")
        with open(path, "w") as f:
            json.dump(body, f)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
            code = main(["lint", path, "--batch-size", "8", "--num-workers", "2", "--sample-bytes", "1m"])
    assert code in (0, 1, 2), code
    assert code != 2 or len(err.getvalue().splitlines()) == 1


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(
    st.sampled_from(
        [
            "metadata",
            "kind",
            "spec.volumes",
            "spec.hostIPC",
            "spec.resources",
            "container.resources",
            "container.volumeMounts",
            "container.name",
            "volume.emptyDir",
            "volume.hostPath",
            "volume.name",
            "mount.name",
            "mount.mountPath",
            "meta.annotations",
            "meta.name",
            "meta.namespace",
        ]
    ),
    values,
)
def test_a_pod_with_any_value_anywhere_is_judged_or_a_usage_error(where, value):
    container = {"name": "trainer", "image": "x", "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}]}
    volume = {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}
    meta = {"name": "p", "annotations": {"shmdoctor.loader": "batch_size=4,num_workers=2,sample_bytes=1m"}}
    spec = {"containers": [container], "volumes": [volume]}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    owner, key = where.split(".") if "." in where else ("pod", where)
    {
        "pod": pod,
        "spec": pod["spec"],
        "container": container,
        "volume": volume,
        "meta": meta,
        "mount": container["volumeMounts"][0],
    }[owner][key] = value
    _lint(pod)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(
    st.sampled_from(["shm_size", "ipc", "tmpfs", "mem_limit", "deploy", "volumes", "labels", "container_name"]), values
)
def test_a_compose_service_with_any_value_anywhere_is_judged_or_a_usage_error(key, value):
    _lint({"services": {"trainer": {"image": "x", key: value}}})


SECRET = "hunter2-do-not-print"
# Pieces of compose's interpolation syntax, names set (to the secret, or empty) and unset, and other text.
interpolation_text = st.lists(
    st.sampled_from(["$", "{", "}", ":", "-", "?", "+", "$$", "${", "SET", "EMPTY", "UNSET", "x", " ", "\n", "/", "1"]),
    max_size=16,
)


@settings(max_examples=500)
@given(interpolation_text)
def test_interpolation_is_a_string_or_an_error_that_never_shows_a_value(pieces):
    text = "".join(pieces)
    try:
        result = interpolate(text, {"SET": SECRET, "EMPTY": ""}, set())
    except UsageError as e:
        assert str(e) and "\n" not in str(e) and SECRET not in str(e)
        return
    assert "$" in text or result == text


@given(st.text(max_size=200))
def test_any_text_parses_as_documents_or_a_usage_error(text):
    _one_line_usage_error(parse, text, "generated.yaml")


@given(values)
def test_any_json_document_reads_back(body):
    docs = parse(json.dumps(body), "generated.json")
    assert [d.body for d in docs] == ([] if body is None else [body])  # `null` is no document, as YAML's empty one
