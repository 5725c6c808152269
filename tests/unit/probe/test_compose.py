"""Compose services -> Facts: a table of service definitions and what Docker gives them, then a real-world file."""

from __future__ import annotations

import pytest

from shmdoctor.errors import UsageError
from shmdoctor.model import Swarm
from shmdoctor.probe import compose, documents
from shmdoctor.sizes import GiB, MiB
from tests.helpers import DATA as TEST_DATA

DATA = TEST_DATA / "manifests"


def services(text: str, swarm: bool | None = None) -> dict:
    [doc] = documents.parse(text, "docker-compose.yml")
    return {d.facts.target.name.split(":", 1)[1]: d for d in compose.probe(doc, swarm)}


def one(service_yaml: str, swarm: bool | None = None, extra: str = ""):
    body = "\n".join("    " + line for line in service_yaml.strip().splitlines())
    return services(f"services:\n  svc:\n    image: busybox\n{body}\n{extra}", swarm)["svc"].facts


# (service keys, size, source, IPC mode); a size of None is said in unreadable (a 'probe-incomplete' warning)
CASES = [
    ("", 64 * MiB, "docker-shm", "private"),
    ("shm_size: 2g", 2 * GiB, "docker-shm", "private"),
    ("shm_size: 2147483648", 2 * GiB, "docker-shm", "private"),
    ("shm_size: '1.5gb'", 1536 * MiB, "docker-shm", "private"),
    ("shm_size: 256M\nipc: shareable", 256 * MiB, "docker-shm", "shareable"),
    ("ipc: private\nshm_size: 1g", GiB, "docker-shm", "private"),
    ("tmpfs: /dev/shm:size=512m", 512 * MiB, "tmpfs", "private"),
    ("tmpfs:\n  - /run\n  - /dev/shm:size=1g,mode=1777", GiB, "tmpfs", "private"),
    ("shm_size: 2g\ntmpfs: /dev/shm:size=512m", 512 * MiB, "tmpfs", "private"),  # the mount wins over ShmSize
    ("volumes:\n  - type: tmpfs\n    target: /dev/shm\n    tmpfs: {size: 1073741824}", GiB, "tmpfs", "private"),
    ("ipc: host\nshm_size: 2g", None, "host-ipc", "host"),  # shm_size is ignored with the host's IPC
    ("volumes:\n  - /dev/shm:/dev/shm", None, "host", "private"),
    ("volumes:\n  - {type: bind, source: /dev/shm, target: /dev/shm}", None, "host", "private"),
    # a volume at /dev/shm is what the container sees there, whatever shm_size says; its size is the volume's
    ("shm_size: 2g\nvolumes:\n  - data:/dev/shm", None, "unknown", "private"),
    ("shm_size: 2g\nvolumes:\n  - {type: volume, source: data, target: /dev/shm}", None, "unknown", "private"),
    ("volumes:\n  - ./scratch:/dev/shm:rw", None, "unknown", "private"),
    ("volumes:\n  - /dev/shm", None, "unknown", "private"),  # an anonymous volume
    ("tmpfs: /dev/shm:size=50%", None, "tmpfs", "private"),  # a share of the host's memory
    ("tmpfs: /dev/shm", None, "tmpfs", "private"),
]


@pytest.mark.parametrize("keys, size, source, ipc", CASES)
def test_service_shm(keys, size, source, ipc):
    facts = one(keys)
    assert (facts.shm.size_bytes, facts.shm.source, facts.ipc.mode) == (size, source, ipc)
    assert facts.shm.free_bytes is None and facts.shm.used_bytes is None  # a file: nothing runs, use is not known
    unknown = [u for u in facts.unreadable if u.startswith("the size of /dev/shm")]
    assert len(unknown) == (size is None), facts.unreadable
    assert facts.target.kind == "service" and facts.runtime == "compose"


@pytest.mark.parametrize(
    "keys, read_only",
    [
        ("tmpfs: /dev/shm:ro,size=2g", True),
        ("tmpfs: /dev/shm:size=2g,ro", True),
        ("tmpfs: /dev/shm:size=2g", False),
        ("tmpfs: /dev/shm:rw,size=2g", False),
        ("volumes: [/dev/shm:/dev/shm:ro]", True),
        ("volumes: [/dev/shm:/dev/shm:rw]", False),
        ("volumes: [{type: bind, source: /dev/shm, target: /dev/shm, read_only: true}]", True),
        ("volumes: [{type: tmpfs, target: /dev/shm, read_only: true, tmpfs: {size: 1073741824}}]", True),
        ("volumes: [{type: tmpfs, target: /dev/shm, tmpfs: {size: 1073741824}}]", False),
        ("read_only: true\nshm_size: 2g", False),  # a read-only root: Docker's shm mount stays writable
    ],
)
def test_a_read_only_shm_is_said_and_fails(keys, read_only):
    from shmdoctor.rules import judge

    facts = one(keys)
    assert facts.shm.read_only is read_only
    ids = [f.id for f in judge(facts, None).findings]
    assert ids[:1] == ["shm-read-only"] if read_only else "shm-read-only" not in ids


def test_ipc_none_has_no_shm():
    facts = one("ipc: none")
    assert not facts.shm.present and facts.ipc.mode == "none"


def test_tmpfs_without_size_is_unknown_and_said():
    facts = one("tmpfs: [/dev/shm]")
    assert facts.shm.size_bytes is None and "half the host's memory" in facts.unreadable[0]


@pytest.mark.parametrize(
    "keys, limit",
    [
        ("mem_limit: 8g", 8 * GiB),
        ("deploy: {resources: {limits: {memory: 2G}}}", 2 * GiB),
        ("mem_limit: 8g\ndeploy: {resources: {limits: {memory: 2G}}}", 2 * GiB),  # the tighter one
        ("", None),
    ],
)
def test_memory_limit(keys, limit):
    assert one(keys).memory.limit_bytes == limit


def test_ipc_service_and_container_resolve_to_the_owner():
    found = services("""
services:
  owner: {image: x, ipc: shareable, shm_size: 768m, container_name: the-owner}
  by-service: {image: x, ipc: "service:owner"}
  by-container: {image: x, ipc: "container:the-owner"}
  chained: {image: x, ipc: "service:by-service"}
  outside: {image: x, ipc: "container:dcgm-exporter"}
""")
    for name in ("by-service", "by-container", "chained"):
        facts = found[name].facts
        assert facts.shm.size_bytes == 768 * MiB and facts.ipc.mode == "container", name
    assert found["by-service"].facts.ipc.owner == "owner"
    outside = found["outside"].facts
    assert outside.shm.size_bytes is None
    assert "ipc: container:dcgm-exporter: that container is not defined in this file" in outside.unreadable[0]


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "services:\n  a: {image: x, ipc: 'service:nope'}\n",
            "docker-compose.yml:2: service 'a': ipc: service:nope: no service",
        ),
        ("services:\n  a: {image: x, ipc: 'service:b'}\n  b: {image: x, ipc: 'service:a'}\n", "a cycle"),
        ("services:\n  a: {image: x, ipc: sometimes}\n", "ipc: unknown mode 'sometimes'"),
        (
            "services:\n  a:\n    image: x\n    shm_size: plenty\n",
            "docker-compose.yml:3: service 'a': shm_size: cannot read 'plenty'",
        ),
        ("services:\n  a: just-a-string\n", "service 'a' is not a mapping"),
        ("services:\n  a: {image: x, tmpfs: '/dev/shm:size=1.5g'}\n", "service 'a': tmpfs size: cannot read '1.5g'"),
    ],
)
def test_bad_services_name_file_and_line(text, message):
    with pytest.raises(UsageError, match=None) as e:
        services(text)
    assert message in str(e.value)


ENV = {"SET": "value", "EMPTY": "", "FALLBACK": "fb"}


# (as written, interpolated, unset variables used bare): the compose spec's table, with SET, EMPTY (set to ''), UNSET
@pytest.mark.parametrize(
    "text, expected, unset",
    [
        ("${SET}", "value", set()),
        ("$SET", "value", set()),
        ("a${SET}b$SET.c", "avalueb" + "value.c", set()),
        ("${UNSET}", "", {"UNSET"}),
        ("$UNSET", "", {"UNSET"}),
        ("${UNSET:-d}", "d", set()),
        ("${UNSET-d}", "d", set()),
        ("${EMPTY:-d}", "d", set()),
        ("${EMPTY-d}", "", set()),  # ':-' for unset or empty, '-' for unset only
        ("${SET:-d}", "value", set()),
        ("${SET:+alt}", "alt", set()),
        ("${EMPTY:+alt}", "", set()),
        ("${EMPTY+alt}", "alt", set()),
        ("${UNSET+alt}", "", set()),
        ("${SET?e}", "value", set()),
        ("${EMPTY?e}", "", set()),
        ("${UNSET:-${FALLBACK}}", "fb", set()),
        ("${UNSET:-${ALSO:-deep}}", "deep", set()),
        ("${UNSET-$FALLBACK}", "fb", set()),
        ("$$SET", "$SET", set()),
        ("$${SET}", "${SET}", set()),
        ("${UNSET:-$$}", "$", set()),
        ("5$", "5$", set()),
        ("$1 and $-", "$1 and $-", set()),  # not a variable: kept as written
    ],
)
def test_interpolation_follows_the_compose_spec(text, expected, unset):
    found: set[str] = set()
    assert compose.interpolate(text, ENV, found) == expected
    assert found == unset


@pytest.mark.parametrize(
    "text, message",
    [
        ("${UNSET:?give the size}", "variable UNSET is unset or empty: give the size"),
        ("${EMPTY:?}", "variable EMPTY is unset or empty"),
        ("${UNSET?}", "variable UNSET is unset"),
        ("${SET/a/b}", "invalid interpolation: '${SET/a/b}'"),
        ("${SET", "invalid interpolation: '${SET' has no closing '}'"),
    ],
)
def test_interpolation_errors(text, message):
    with pytest.raises(UsageError) as e:
        compose.interpolate(text, ENV, set())
    assert str(e.value).startswith(message)


def test_interpolation_in_a_service(monkeypatch):
    monkeypatch.setenv("TRAIN_SHM", "3g")
    monkeypatch.setenv("EMPTY_SHM", "")
    assert one("shm_size: ${TRAIN_SHM}").shm.size_bytes == 3 * GiB
    assert one("shm_size: ${UNSET_SHM_FOR_TEST:-1g}").shm.size_bytes == GiB
    assert one("shm_size: ${EMPTY_SHM:-1g}").shm.size_bytes == GiB
    assert one("tmpfs: /dev/shm:size=${TRAIN_SHM}").shm.size_bytes == 3 * GiB
    assert one("volumes:\n  - {type: tmpfs, target: /dev/shm, tmpfs: {size: '${TRAIN_SHM}'}}").shm.size_bytes == 3 * GiB
    assert one("deploy: {resources: {limits: {memory: '${TRAIN_SHM}'}}}").memory.limit_bytes == 3 * GiB
    unset = one("shm_size: ${UNSET_SHM_FOR_TEST}")  # compose: a warning and an empty string, so the default
    assert unset.shm.size_bytes == 64 * MiB
    assert unset.unreadable == (
        "the variables UNSET_SHM_FOR_TEST (not set here: compose would substitute an empty string)",
    )
    assert one("volumes: ['${UNSET_DATA_FOR_TEST}:/data']").unreadable == ()  # only what decides /dev/shm counts


@pytest.mark.parametrize(
    "keys, message",
    [
        ("shm_size: ${SECRET_FOR_TEST}", "shm_size: cannot read '${SECRET_FOR_TEST}' as a size once its variables"),
        ("tmpfs: /dev/shm:size=${SECRET_FOR_TEST}", "tmpfs size: cannot read '/dev/shm:size=${SECRET_FOR_TEST}'"),
        (
            "volumes: [{type: tmpfs, target: /dev/shm, tmpfs: {size: '${SECRET_FOR_TEST}'}}]",
            "tmpfs.size: cannot read '${SECRET_FOR_TEST}'",
        ),
        ("mem_limit: ${SECRET_FOR_TEST}", "mem_limit: cannot read '${SECRET_FOR_TEST}'"),
        (
            "deploy: {resources: {limits: {memory: '${SECRET_FOR_TEST}'}}}",
            "deploy.resources.limits.memory: cannot read",
        ),
        ("ipc: ${SECRET_FOR_TEST}", "ipc: unknown mode '${SECRET_FOR_TEST}'"),
        ("ipc: service:${SECRET_FOR_TEST}", "ipc: service:${SECRET_FOR_TEST}: no service of that name"),
        (
            "shm_size: ${SECRET_FOR_TEST:?is required}",
            "shm_size: variable SECRET_FOR_TEST is unset or empty: is required",
        ),
    ],
)
def test_errors_name_variables_never_their_values(monkeypatch, keys, message):
    secret = "hunter2-do-not-print"
    monkeypatch.setenv("SECRET_FOR_TEST", "" if "required" in message else secret)
    with pytest.raises(UsageError) as e:
        one(keys)
    assert message in str(e.value) and secret not in str(e.value)
    assert str(e.value).startswith("docker-compose.yml:3: service 'svc': ")


@pytest.mark.parametrize(
    "extra_service, swarm",
    [
        ("deploy: {mode: replicated, replicas: 2}", True),
        ("deploy: {placement: {constraints: [node.role == worker]}}", True),
        ("deploy: {update_config: {parallelism: 1}}", True),
        ("deploy: {replicas: 2, resources: {limits: {memory: 4G}}}", False),  # docker compose honours these too
        ("", False),
    ],
)
def test_swarm_is_told_by_swarm_only_deploy_keys(extra_service, swarm):
    facts = one(f"shm_size: 2g\n{extra_service}")
    assert (facts.swarm is not None) == swarm
    assert facts.shm.size_bytes == (64 * MiB if swarm else 2 * GiB)


def test_swarm_by_overlay_network_and_by_flag():
    assert one("shm_size: 2g", extra="networks:\n  net: {driver: overlay}").swarm is not None
    assert one("shm_size: 2g", swarm=True).swarm is not None
    assert one("shm_size: 2g\ndeploy: {mode: global}", swarm=False).swarm is None


def test_swarm_ignores_shm_size_and_ipc_but_honours_a_tmpfs():
    facts = one("shm_size: 2g\nipc: host", swarm=True)
    assert facts.shm.size_bytes == 64 * MiB and facts.ipc.mode == "private"
    assert facts.swarm == Swarm(ignored_shm_size=2 * GiB, ignored_ipc="host")
    assert one("image: x", swarm=True).swarm == Swarm()  # meant for Swarm, nothing it ignores
    tmpfs = one("volumes:\n  - {type: tmpfs, target: /dev/shm, tmpfs: {size: 2147483648}}", swarm=True)
    assert (tmpfs.shm.size_bytes, tmpfs.shm.source) == (2 * GiB, "tmpfs")


def test_loader_label_as_mapping_or_list():
    mapping = services("services:\n  a: {image: x, labels: {shmdoctor.loader: 'batch_size=8,sample_bytes=1m'}}\n")
    assert mapping["a"].loader_spec == "batch_size=8,sample_bytes=1m"
    found = services(
        "services:\n  a:\n    image: x\n    labels:\n      - team=vision\n"
        "      - shmdoctor.loader=batch_size=8,num_workers=2,sample_bytes=1m\n"
    )
    assert found["a"].loader_spec == "batch_size=8,num_workers=2,sample_bytes=1m"
    assert found["a"].loader_at == "docker-compose.yml:3"


def test_the_real_world_compose_file():
    [doc] = documents.parse((DATA / "docker-compose.yml").read_text(), "docker-compose.yml")
    found = {d.facts.target.name: d for d in compose.probe(doc)}
    size = {name.split(":")[1]: d.facts.shm.size_bytes for name, d in found.items()}
    assert size == {
        "trainer": 2 * GiB,
        "evaluator": 64 * MiB,
        "preprocess": 512 * MiB,
        "augment": GiB,
        "feature-store": 256 * MiB,
        "feature-reader": 256 * MiB,
        "feature-follower": 256 * MiB,
        "monitor": None,
        "notebook": None,
        "bigshm-smallmem": 4 * GiB,
    }
    trainer = found["docker-compose.yml:trainer"]
    assert trainer.facts.memory.limit_bytes == 16 * GiB  # mem_limit, with the x-common anchor merged in
    assert trainer.loader_spec == "batch_size=100,num_workers=4,sample_bytes=1MiB"
    assert found["docker-compose.yml:preprocess"].facts.memory.limit_bytes == 2 * GiB
    assert not any(d.facts.swarm for d in found.values())  # GPU reservations are not Swarm


@pytest.mark.parametrize(
    "text, expected",
    [
        ("SHM=2g\n", {"SHM": "2g"}),
        ("# comment\n\nexport SHM=2g\n", {"SHM": "2g"}),
        ("SHM='2g'\nMEM=\"8g\"\n", {"SHM": "2g", "MEM": "8g"}),
        ("SHM=2g # the loader's\n", {"SHM": "2g"}),
        ("SHM='a # b'\n", {"SHM": "a # b"}),
        ("EMPTY=\n", {"EMPTY": ""}),
        ("A = 1\n", {"A": "1"}),
    ],
)
def test_env_file_lines(text, expected):
    assert compose.parse_env_file(text, ".env") == expected


@pytest.mark.parametrize("text", ["just words\n", "1BAD=x\n", "TOKEN hunter2\n"])
def test_a_bad_env_file_line_names_file_and_line_not_its_text(text):
    with pytest.raises(UsageError) as e:
        compose.parse_env_file("OK=1\n" + text, "/x/.env")
    assert str(e.value).startswith("/x/.env:2: not a KEY=VALUE line") and "hunter2" not in str(e.value)


def test_gpu_device_ids_are_read_as_compose_substitutes_them():
    """device_ids: ['${GPU_ID:-0}'] is GPU 0 where GPU_ID is unset (compose's default), not the text."""
    facts = one("deploy:\n  resources:\n    reservations:\n      devices:\n"
                "        - {driver: nvidia, device_ids: ['${GPU_ID:-0}'], capabilities: [gpu]}")  # fmt: skip
    assert facts.gpus == "0"
