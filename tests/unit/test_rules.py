"""A table of catching and non-catching cases per rule (hadolint-style): Facts + loader -> which rules fire."""

import json
from dataclasses import replace

import pytest

from shmdoctor import fixes
from shmdoctor.loader import LoaderSpec, loader_config, requirement
from shmdoctor.model import SHM_SIZE_UNKNOWN, Facts, Ipc, Memory, Serving, Shm, Swarm, Target
from shmdoctor.render import forms
from shmdoctor.rules import RULES, judge
from shmdoctor.sizes import GiB, MiB
from shmdoctor.workload import Consumers, Workload

BASE = Facts(
    target=Target("local", "trainer"),
    shm=Shm(True, 64 * MiB, 0, 64 * MiB, "docker-shm"),
    ipc=Ipc("private"),
    memory=Memory(None, 10 * MiB),
    runtime="docker",
    nofile=1048576,
)


UNSIZED = f"{SHM_SIZE_UNKNOWN} (a file does not tell)"


def shm(size, used=0, source="docker-shm", read_only=False):
    return Shm(True, size, used, size - used, source, read_only=read_only)


def seed(**kw):  # batch 100 × 1 MiB, 4 workers: needs 900 MiB
    return requirement(loader_config(**{"batch_size": 100, "num_workers": 4, "sample_bytes": "1MiB", **kw}))


def job(f: Facts, loader=True, **consumers):
    """A workload's requirement for these facts: the seed loader and the consumers given."""
    spec = LoaderSpec(batch_size=100, num_workers=4, sample_bytes=MiB) if loader else LoaderSpec()
    return Workload(spec, Consumers(**consumers)).requirement(f)


RAY_4G = replace(BASE, memory=Memory(4 * GiB, 100 * MiB))

CASES = {
    "nccl-shm-fallback": [
        # 8 GPUs taken to use P2P: were they not, 813 MiB more would not fit beside the loader in 1 GiB
        (dict(shm=shm(1 * GiB)), job(BASE, gpus=8), True),
        (dict(shm=shm(2 * GiB)), job(BASE, gpus=8), False),
        (dict(shm=shm(1 * GiB)), job(BASE, gpus=8, nccl="p2p"), False),  # P2P said: no fallback to fear
        (dict(shm=shm(1 * GiB)), seed(), False),
    ],
    "ray-object-store-fallback": [
        (dict(memory=Memory(4 * GiB, 100 * MiB)), job(RAY_4G, loader=False, ray_object_store="auto"), True),
        (dict(shm=shm(2 * GiB)), job(RAY_4G, loader=False, ray_object_store="auto"), False),
        (dict(shm=shm(2 * GiB)), job(RAY_4G, loader=False, ray_object_store=3 * GiB), True),
        # Ray keeps /dev/shm only where more is free than the store (services.py: shm_avail > object_store_memory)
        (dict(shm=shm(1 * GiB)), job(RAY_4G, loader=False, ray_object_store=1 * GiB), True),
        (dict(shm=shm(1 * GiB + 4096)), job(RAY_4G, loader=False, ray_object_store=1 * GiB), False),
        (dict(), seed(), False),
    ],
    "shm-too-small": [
        (dict(shm=shm(64 * MiB)), seed(), True),
        (dict(shm=shm(768 * MiB)), seed(), True),  # the folklore formula says 800 MiB fits; it does not
        (dict(shm=shm(2 * GiB, used=1200 * MiB)), seed(), True),  # someone else holds most of it
        (dict(shm=shm(2 * GiB)), seed(), False),
        (dict(shm=shm(64 * MiB)), seed(num_workers=0), False),
        (dict(), None, False),
    ],
    "no-shm": [
        (dict(shm=Shm(False, None, None, None, "none"), ipc=Ipc("none")), seed(), True),
        (dict(shm=Shm(False, None, None, None, "none"), ipc=Ipc("none")), None, True),
        (dict(shm=Shm(False, None, None, None, "none"), ipc=Ipc("none")), seed(num_workers=0), False),
        (dict(), seed(), False),
    ],
    "memory-limit": [
        (dict(shm=shm(2 * GiB), memory=Memory(700 * MiB, 10 * MiB)), seed(), True),
        (dict(shm=shm(2 * GiB), memory=Memory(4 * GiB, 10 * MiB)), seed(), False),
        # 900 MiB of /dev/shm fit a 1 GiB limit, but not beside the training process (seen: OOM-killed)
        (dict(shm=shm(2 * GiB), memory=Memory(1 * GiB, 10 * MiB)), seed(), True),
        (dict(shm=shm(2 * GiB), memory=Memory(None, 10 * MiB)), seed(), False),
        (dict(shm=shm(2 * GiB), memory=Memory(700 * MiB, 10 * MiB)), seed(num_workers=0), False),
    ],
    "thin-headroom": [
        (dict(shm=shm(1 * GiB)), seed(), True),  # 900 MiB of 1 GiB
        (dict(shm=shm(2 * GiB)), seed(), False),
        (dict(shm=shm(2 * GiB), memory=Memory(1300 * MiB, 0)), seed(), True),  # the memory limit is the tighter
        (dict(shm=shm(64 * MiB)), seed(), False),  # it does not fit at all: that is shm-too-small
    ],
    "default-shm": [
        (dict(), None, True),
        (dict(shm=shm(2 * GiB)), None, False),
        (dict(), seed(), False),  # with a loader the need is judged instead
        (dict(shm=shm(64 * MiB, source="runtime-shm"), runtime="kubernetes"), None, True),
        (dict(shm=shm(64 * MiB, source="tmpfs")), None, False),
        (dict(bad_label="batch_size must be an integer"), None, False),  # bad-label says why there is no loader
        (dict(shm=shm(64000 * 1024, source="podman-shm"), runtime="podman"), None, True),
        (dict(shm=shm(1024)), None, True),  # set below the default (Nomad's shm_size is bytes: 1024 is 1 KiB)
        (dict(shm=shm(64 * MiB + 4096)), None, False),  # set above it: a size chosen, no longer the default
        # lint and audit: only where it looks like ML
        (dict(shm=shm(64 * MiB), target=Target("service", "web")), None, False),
        (dict(shm=shm(64 * MiB), target=Target("service", "t"), ml_signs=("command torchrun",)), None, True),
        (dict(shm=shm(64 * MiB), target=Target("container", "t"), gpus="all"), None, True),
        # GPUs reserved for a command that loads nothing (tensorboard, an MPI launcher): no training job
        (
            dict(shm=shm(64 * MiB), target=Target("service", "t"), gpus="all", flags=frozenset({"loads-nothing"})),
            None,
            False,
        ),
    ],
    "remove-ipc": [  # check on a bare host, for a non-system user
        (dict(remove_ipc="systemd's default"), None, True),
        (dict(remove_ipc="/etc/systemd/logind.conf:30"), seed(), True),
        (dict(), None, False),
    ],
    "platform-ignores-shm-size": [  # lint: a Fargate task definition with sharedMemorySize
        (dict(flags=frozenset({"shm-fixed", "shm-size-ignored"}), runtime="ecs"), None, True),
        (dict(flags=frozenset({"shm-fixed"}), runtime="ecs"), None, False),
        (dict(), None, False),
    ],
    "shm-over-memory": [
        (dict(shm=shm(2 * GiB), memory=Memory(700 * MiB, 10 * MiB)), None, True),
        (dict(shm=shm(64 * MiB), memory=Memory(700 * MiB, 10 * MiB)), None, False),
        (dict(shm=shm(2 * GiB)), None, False),
        (dict(shm=shm(2 * GiB), memory=Memory(700 * MiB, 10 * MiB)), seed(), False),  # memory-limit judges a loader
        # a service that does not look like a training or inference job: nothing to warn about
        (dict(shm=shm(2 * GiB), memory=Memory(700 * MiB, 10 * MiB), target=Target("service", "web")), None, False),
    ],
    "nofile-low": [
        (dict(shm=shm(2 * GiB), nofile=64), seed(), True),
        (dict(shm=shm(2 * GiB), nofile=1024), seed(), False),
        (dict(shm=shm(2 * GiB), nofile=64), seed(num_workers=0), False),
    ],
    "ipc-host": [
        (dict(ipc=Ipc("host"), shm=shm(23 * GiB, source="host-ipc")), None, True),
        (dict(ipc=Ipc("host"), shm=shm(23 * GiB, source="system"), runtime="none"), None, False),  # a bare host
        (dict(ipc=Ipc("container", "ipc-owner")), None, False),  # another container's namespace, not the host's
        (dict(ipc=Ipc("host"), target=Target("container", "c"), runtime="none"), None, True),  # any runtime
        (dict(ipc=Ipc("host"), target=Target("service", "s"), runtime="none"), None, True),
        (dict(ipc=Ipc("host"), shm=shm(23 * GiB, source="host-ipc"), runtime="podman"), None, True),  # check inside
        (dict(), None, False),
    ],
    "probe-incomplete": [
        (dict(unreadable=("mounts (/proc/self/mountinfo: Permission denied)",)), None, True),
        (dict(), None, False),
        # the host's /dev/shm (ipc: host in a file, hostIPC, audit of a remote engine): its size matters against a
        # need only; without one, what vLLM's and SGLang's own files do is no warning (ipc-host says it)
        (dict(ipc=Ipc("host"), shm=Shm.unmeasured(None, "host-ipc", "ipc: host"), unreadable=(UNSIZED,)), seed(), True),
        (dict(ipc=Ipc("host"), shm=Shm.unmeasured(None, "host-ipc", "ipc: host"), unreadable=(UNSIZED,)), None, False),
        (
            dict(shm=Shm.unmeasured(None, "host", "hostPath /dev/shm"), unreadable=(UNSIZED,)),
            seed(num_workers=0),
            False,
        ),
        (
            dict(
                shm=Shm.unmeasured(None, "host", "hostPath /dev/shm"),
                unreadable=(UNSIZED, "ulimit -n (permission denied)"),
            ),
            None,
            True,
        ),
        (dict(shm=Shm.unmeasured(None, "tmpfs", "Tmpfs="), unreadable=(UNSIZED,)), None, True),  # not the host's
    ],
    "bad-label": [  # a shmdoctor.loader label or annotation that is not a loader: judged without one
        (dict(bad_label="num_workers must be at most 4096 (more than any machine runs), got 1000000000"), None, True),
        (dict(bad_ignore="container t: its shmdoctor.ignore label: no rule 'default-shmm'"), None, True),  # audit
        (dict(), seed(), False),
    ],
    "oom-killed": [  # audit --all: an exited container with State.OOMKilled
        (dict(flags=frozenset({"oom-killed"})), None, True),
        (dict(flags=frozenset({"oom-killed"}), shm=shm(2 * GiB), memory=Memory(700 * MiB, None)), seed(), True),
        (dict(), seed(), False),
    ],
    "swarm-ignores-shm-size": [  # lint: a compose file meant for docker stack deploy
        (dict(swarm=Swarm(ignored_shm_size=2 * GiB)), None, True),
        (dict(swarm=Swarm(ignored_ipc="host")), seed(), True),
        (dict(swarm=Swarm()), None, False),  # nothing ignored: default-shm says the rest
        (dict(swarm=Swarm(ignored_shm_size=GiB), shm=shm(2 * GiB, source="tmpfs")), None, False),
        (dict(), None, False),
    ],
    "shm-on-disk": [  # lint: an emptyDir without medium: Memory at /dev/shm
        (dict(shm=shm(GiB, source="k8s-emptydir-disk"), runtime="kubernetes"), None, True),
        (dict(shm=Shm(True, None, None, None, "k8s-emptydir-disk"), runtime="kubernetes"), seed(), True),
        (dict(shm=shm(GiB, source="k8s-emptydir"), runtime="kubernetes"), None, False),
        (dict(shm=shm(GiB, source="tmpfs"), runtime="kubernetes"), None, False),
    ],
    "shm-read-only": [  # --tmpfs /dev/shm:ro
        (dict(shm=shm(GiB, source="tmpfs", read_only=True)), None, True),
        (dict(shm=shm(GiB, source="tmpfs", read_only=True)), seed(), True),
        (dict(shm=shm(GiB, source="tmpfs", read_only=True)), seed(num_workers=0), False),
        (dict(), seed(), False),
    ],
    "shm-full": [  # leftovers of killed loaders, or another job
        (dict(shm=shm(64 * MiB, used=64 * MiB)), None, True),
        (dict(shm=shm(GiB, used=GiB - MiB)), seed(), True),
        (dict(shm=shm(GiB, used=GiB // 2)), None, False),
        (dict(shm=Shm(True, None, None, None, "k8s-emptydir"), runtime="kubernetes"), None, False),  # lint: unknown use
    ],
}


@pytest.mark.parametrize(
    "rule_id, changes, need, fires",
    [(rule_id, *case) for rule_id, cases in CASES.items() for case in cases],
)
def test_rule_cases(rule_id, changes, need, fires):
    report = judge(replace(BASE, **changes), need)
    assert (rule_id in [f.id for f in report.findings]) == fires


def test_every_rule_has_cases_both_ways():
    for r in (r for r in RULES if r.on == "facts"):  # bench's rules: tests/unit/test_rules_bench.py
        outcomes = {case[2] for case in CASES.get(r.id, [])}
        assert outcomes == {True, False}, f"rule {r.id} needs catching and non-catching cases"


def test_shm_over_memory_says_what_the_limit_leaves_not_the_limit_twice():
    """GKE's TGI and vLLM samples: an unsized memory emptyDir is the limit itself (60 GiB of 60 GiB). The words were
    '/dev/shm (60 GiB) is larger than the memory limit (60 GiB) ... beside the training process' for a server."""
    gpu_server = replace(BASE, target=Target("workload", "llm"), gpus="2", memory=Memory(60 * GiB, None))
    report = judge(replace(gpu_server, shm=Shm.unmeasured(60 * GiB, "k8s-emptydir", "dshm")), None)
    [msg] = [f.message for f in report.findings if f.id == "shm-over-memory"]
    # 60 GiB less the 256 MiB kept for the processes themselves: 59.75 GiB
    assert msg.startswith("/dev/shm (60 GiB) can outgrow what the memory limit (60 GiB) leaves beside the processes'")
    assert "(59.8 GiB)" in msg and "training process" not in msg and "OOM-killed (exit 137)" in msg


def test_the_hosts_dev_shm_of_unknown_size_says_what_it_must_hold_and_keeps_other_unread_facts():
    """ipc: host in a file with the seed loader (900 MiB): the one thing to check on the host, with the number."""
    facts = replace(
        BASE,
        ipc=Ipc("host"),
        shm=Shm.unmeasured(None, "host-ipc", "ipc: host"),
        unreadable=("ulimit -n (permission denied)", UNSIZED),
    )
    [finding] = [f for f in judge(facts, seed()).findings if f.id == "probe-incomplete"]
    assert finding.message == (
        f"could not read {UNSIZED}: it must hold this loader's 900 MiB (`df -h /dev/shm` on the host says whether it "
        "does); ulimit -n (permission denied)"
    )


def test_verdicts_and_exit_codes():
    assert judge(replace(BASE, shm=shm(64 * MiB)), seed()).verdict == "fail"
    assert judge(replace(BASE, shm=shm(64 * MiB)), seed()).exit_code == 1
    warn = judge(replace(BASE, shm=shm(1 * GiB)), seed())
    assert (warn.verdict, warn.exit_code) == ("warn", 0)
    assert judge(replace(BASE, shm=shm(1 * GiB)), seed(), fail_on="warning").verdict == "fail"
    assert judge(replace(BASE, shm=shm(2 * GiB)), seed()).verdict == "ok"


def test_shm_fix_is_computed_with_margin_and_its_alternatives():
    report = judge(replace(BASE, shm=shm(64 * MiB)), seed())
    fixes = report.findings[0].fixes
    assert (fixes[0].shm_bytes, fixes[0].memory_bytes, fixes[0].ipc) == (1536 * MiB, None, None)  # 900 MiB × 1.25
    assert forms.run_args(fixes[0], report.facts) == ("--shm-size=1536m",)  # → 1125 MiB → 1.5 GiB
    assert (fixes[1].ipc, fixes[1].shm_bytes) == ("host", None) and fixes[1].caveat
    assert {tuple(f.loader) for f in fixes[2:]} == {("batch_size",)}  # no worker count fits 64 MiB
    assert fixes[2].loader == {"batch_size": 5}  # 9 batches of 5 MiB: 45 of 64 MiB, within the headroom


@pytest.mark.parametrize("free, cap", [(98_306_560, 78_643_200), (98_301_440, None)])
def test_ray_is_told_to_cap_its_store_only_at_rays_minimum_or_more(free, cap):
    # what fits is 80% of what is free, page-floored: 75 MiB (78,643,200 B) of 98,306,560 B, one page less of
    # 98,301,440 B; Ray refuses a store below 75 MiB (ray_constants.OBJECT_STORE_MINIMUM_MEMORY_BYTES)
    report = judge(replace(BASE, shm=shm(free)), job(RAY_4G, loader=False, ray_object_store=1 * GiB))
    fixes = next(f for f in report.findings if f.id == "ray-object-store-fallback").fixes
    caps = [f.summary for f in fixes if f.summary.startswith("cap Ray's")]
    assert caps == ([f"cap Ray's object store at what fits: ray.init(object_store_memory={cap})"] if cap else [])


def test_tmpfs_override_gets_a_tmpfs_fix_and_memory_limit_grows_with_shm():
    report = judge(replace(BASE, shm=shm(512 * MiB, source="tmpfs"), memory=Memory(1 * GiB, 0)), seed())
    grow = next(f for f in report.findings if f.id == "shm-too-small").fixes[0]
    assert forms.run_args(grow, report.facts) == ("--tmpfs", "/dev/shm:size=1536m", "--memory=1536m")
    assert (grow.shm_bytes, grow.memory_bytes) == (1536 * MiB, 1536 * MiB)  # 256 MiB + 1125 MiB, rounded up


def test_largest_loader_that_fits_today():
    report = judge(replace(BASE, shm=shm(512 * MiB)), seed())
    loaders = [f.loader for f in report.findings[0].fixes if f.loader]
    # 80% of 512 MiB is usable: 2 workers (500 MiB) would fit to the page, and did fail for real at such margins
    assert loaders == [{"num_workers": 1}, {"batch_size": 45}]


@pytest.mark.parametrize(
    "changes",
    [
        dict(shm=shm(64 * MiB)),
        dict(shm=shm(512 * MiB)),
        dict(shm=shm(768 * MiB)),
        dict(shm=shm(2 * GiB), memory=Memory(700 * MiB, 10 * MiB)),
        dict(shm=shm(2 * GiB), memory=Memory(1 * GiB, 143 * MiB)),
    ],
)
def test_a_loader_that_fits_today_fits_with_room_to_spare(changes):
    """Every 'fits today' fix, applied, is judged ok: no error and no thin headroom (a fix must not need a fix)."""
    facts = replace(BASE, **changes)
    report = judge(facts, seed())
    alternatives = [fix.loader for f in report.findings for fix in f.fixes if fix.loader]
    assert alternatives
    for loader in alternatives:
        assert judge(facts, seed(**loader)).verdict == "ok", loader


@pytest.mark.parametrize(
    "source, ipc, runtime, args",
    [
        ("docker-shm", "private", "docker", ("--shm-size=2g",)),  # (900 + 400 in use) MiB × 1.25
        ("tmpfs", "private", "docker", ("--tmpfs", "/dev/shm:size=2g")),
        ("host-ipc", "host", "docker", ("--ipc=private", "--shm-size=1536m")),  # --shm-size alone: ignored
        ("host", "private", "docker", ("--shm-size=1536m",)),
    ],
)
def test_the_shm_fix_is_said_for_where_dev_shm_comes_from(source, ipc, runtime, args):
    facts = replace(BASE, shm=Shm(True, 512 * MiB, 400 * MiB, 112 * MiB, source), ipc=Ipc(ipc), runtime=runtime)
    fixes = next(f for f in judge(facts, seed()).findings if f.id == "shm-too-small").fixes
    assert forms.run_args(fixes[0], facts) == args  # the host's 400 MiB in use stay behind once it has its own
    assert "host" not in [f.ipc for f in fixes] or source not in ("host", "host-ipc")


def test_on_a_bare_machine_the_fix_is_a_remount():
    facts = replace(BASE, shm=shm(64 * MiB, source="system"), ipc=Ipc("host"), runtime="none")
    [grow, *_] = next(f for f in judge(facts, seed()).findings if f.id == "shm-too-small").fixes
    assert forms.statements(grow, facts) == ("mount -o remount,size=1536m /dev/shm",)


def test_the_kubernetes_fix_invents_no_memory_limit():
    facts = replace(BASE, runtime="kubernetes")
    without = forms.block(judge(facts, seed()).findings[0].fixes[0], facts)
    assert "sizeLimit: 1536Mi" in without and "limits:" not in without
    facts = replace(facts, memory=Memory(1 * GiB, 0))
    grow = next(f for f in judge(facts, seed()).findings if f.id == "shm-too-small").fixes[0]
    assert "resources: {limits: {memory: 1536Mi}}" in forms.block(grow, facts)  # 256 MiB + 900 MiB × 1.25


def test_swarm_says_what_it_ignores_and_mounts_a_tmpfs_instead():
    facts = replace(BASE, target=Target("service", "stack.yml:trainer"), runtime="compose")
    both = judge(replace(facts, swarm=Swarm(ignored_shm_size=2 * GiB, ignored_ipc="host")), None)
    finding = next(f for f in both.findings if f.id == "swarm-ignores-shm-size")
    assert "docker stack deploy ignores ipc: host and shm_size: 2 GiB (moby#26714)" in finding.message
    swarm = both.facts
    assert "tmpfs: {size: 2147483648}" in forms.block(finding.fixes[0], swarm)  # the size the file asked for
    ipc_only = judge(replace(facts, swarm=Swarm(ignored_ipc="host")), None)
    fix = next(f for f in ipc_only.findings if f.id == "swarm-ignores-shm-size").fixes[0]
    assert "type: bind" in forms.block(fix, ipc_only.facts) and fix.caveat == fixes.HOST_SHM_CAVEAT  # what it shares
    grown = judge(replace(facts, swarm=Swarm()), seed())
    grow = grown.findings[0].fixes
    assert "type: bind" in forms.block(grow[1], grown.facts) and grow[1].caveat == fixes.HOST_SHM_CAVEAT


def _finding(facts: Facts, need, rule_id: str):
    return next(f for f in judge(facts, need).findings if f.id == rule_id)


@pytest.mark.parametrize("limit, fires", [(2322 * MiB, False), (2322 * MiB - 4096, True)])
def test_memory_limit_keeps_a_training_process_per_rank_to_the_byte(limit, fires):
    """2 ranks of the seed loader: 1800 MiB of /dev/shm, 10 MiB in use, 2 × 256 MiB for the processes: a 2322 MiB
    limit holds it exactly (need equal to room); a page less does not (one process's 256 MiB would leave 2056)."""
    report = judge(replace(BASE, shm=shm(4 * GiB), memory=Memory(limit, 10 * MiB)), seed(ranks=2))
    assert ("memory-limit" in [f.id for f in report.findings]) == fires


def test_memory_limit_says_the_reserve_of_every_rank():
    facts = replace(BASE, shm=shm(4 * GiB), memory=Memory(2 * GiB, 10 * MiB))
    finding = _finding(facts, seed(ranks=2), "memory-limit")
    # 2 ranks × 256 MiB beside 2 × 900 MiB (1.76 GiB) of /dev/shm
    assert finding.message.startswith(
        "the memory limit (2 GiB, 10 MiB in use, ~512 MiB for the training process) cannot hold this loader's "
        "1.76 GiB of /dev/shm"
    )
    assert finding.fixes[0].memory_bytes == 3 * GiB  # 10 + 512 + 1800 × 1.25 = 2772 MiB, the next nice size


def test_thin_headroom_says_the_share_it_takes():
    finding = _finding(replace(BASE, shm=shm(1 * GiB)), seed(), "thin-headroom")
    assert "it needs 900 MiB of the 1 GiB available of /dev/shm (88%);" in finding.message  # 900 / 1024 = 87.9%


@pytest.mark.parametrize(
    "changes, batch",
    [
        # 80% of 64 MiB is 53,687,091 B; a ninth (2·4 + 1 batches) is 5,965,232, page-floored 5,963,776: 5.69 MiB
        (dict(), "the default 64 MiB: with 4 workers (prefetch_factor 2), batches over 5.69 MiB do not fit"),
        # Podman's 64000 KiB: 80% is 52,428,800 B; a ninth 5,825,422, page-floored 5,824,512: 5.55 MiB
        (
            dict(shm=shm(64000 * 1024, source="podman-shm"), runtime="podman"),
            "Podman's default 62.5 MiB: with 4 workers (prefetch_factor 2), batches over 5.55 MiB do not fit",
        ),
        # 32 MiB set: 80% is 26,843,545 B; a ninth 2,982,616, page-floored 2,981,888: 2.84 MiB
        (
            dict(shm=shm(32 * MiB)),
            "set to 32 MiB, below the default: with 4 workers (prefetch_factor 2), batches over 2.84 MiB do not fit",
        ),
        (dict(shm=shm(1024)), "set to 1 KiB, below the default: with 4 workers (prefetch_factor 2), no batch fits"),
    ],
)
def test_default_shm_says_the_largest_batch_that_fits(changes, batch):
    assert f"/dev/shm is {batch}." in _finding(replace(BASE, **changes), None, "default-shm").message


def test_nofile_low_counts_a_descriptor_per_tensor_in_flight():
    # 2 tensors a batch (an image and its label) × 129 batches (2·64 + 1) + 256 of the process's own: 514
    need = seed(num_workers=64, sample_bytes=None, sample_tensors=(MiB, 8))
    facts = replace(BASE, shm=shm(2 * GiB), nofile=512)
    finding = _finding(facts, need, "nofile-low")
    assert "ulimit -n is 512; the loader holds a descriptor per shared tensor (~514 with" in finding.message
    assert forms.run_args(finding.fixes[0], facts) == ("--ulimit=nofile=2056",)  # 4 × 514
    assert "nofile-low" not in [f.id for f in judge(replace(facts, nofile=514), need).findings]


def test_vllm_is_said_to_refuse_what_the_loader_leaves_it():
    facts = replace(BASE, shm=shm(1 * GiB))
    finding = _finding(facts, job(facts, serve="vllm", tensor_parallel_size=2), "shm-too-small")
    # the loader's 900 MiB go first: 124 MiB of 1 GiB left for the scheduler's ring, (16 MiB + 1 + 2) × 10 B
    assert (
        "vLLM refuses to start ('Insufficient space in /dev/shm for the scheduler's broadcast queue: "
        "160.00 MiB required, 124.00 MiB free')" in finding.message
    )


def test_ray_is_said_what_the_loader_leaves_of_dev_shm():
    facts = replace(RAY_4G, shm=shm(1536 * MiB))
    finding = _finding(facts, job(facts, ray_object_store=1 * GiB), "ray-object-store-fallback")
    # 1536 MiB less the loader's 900: 636 MiB, short of the 1 GiB store; 80% of it to the page: 533,512,192 B
    assert finding.message.startswith("Ray's object store (1 GiB) does not fit the 636 MiB of /dev/shm left:")
    cap = 636 * MiB * 4 // 5 // 4096 * 4096
    assert finding.fixes[-1].summary == f"cap Ray's object store at what fits: ray.init(object_store_memory={cap})"


def _ids(facts: Facts, need) -> set[str]:
    return {f.id for f in judge(facts, need).findings}


def test_need_equal_to_free_fits_with_thin_headroom_a_page_less_fails():
    exact, short = (_ids(replace(BASE, shm=shm(size)), seed()) for size in (900 * MiB, 900 * MiB - 4096))
    assert "thin-headroom" in exact and "shm-too-small" not in exact
    assert "shm-too-small" in short and "thin-headroom" not in short


@pytest.mark.parametrize("size, fires", [(768 * MiB, False), (768 * MiB + 4096, True)])
def test_shm_over_memory_from_a_page_over_what_the_limit_leaves(size, fires):
    # a 1 GiB limit, nothing in use, 256 MiB for the processes: 768 MiB left
    assert ("shm-over-memory" in _ids(replace(BASE, shm=shm(size), memory=Memory(1 * GiB, 0)), None)) == fires


@pytest.mark.parametrize(
    "free, said",
    [
        (1 * MiB, None),  # a twentieth of 20 MiB free: not yet
        (1 * MiB - 4096, "/dev/shm is nearly full: 19 MiB of 20 MiB in use"),
        (4096, "/dev/shm is nearly full: 20 MiB of 20 MiB in use"),  # 19.996 MiB
        (0, "/dev/shm is full: 20 MiB of 20 MiB in use"),
    ],
)
def test_shm_full_below_a_twentieth_free_and_full_at_none(free, said):
    report = judge(replace(BASE, shm=shm(20 * MiB, used=20 * MiB - free)), None)
    found = [f.message for f in report.findings if f.id == "shm-full"]
    assert found == ([f"{said}; segments of killed loaders stay until removed"] if said else [])


@pytest.mark.parametrize("extra, fires", [(0, False), (-4096, True)])
def test_nccl_fallback_warns_from_a_page_short_of_loader_and_rings(extra, fires):
    # 8 GPUs over SHM: 60 connections (rings 8·4, trees 7·4) of 9,650,176 B and 8 proxy pools of 34,213,888 B,
    # beside the loader's 900 MiB
    worst = 900 * MiB + 60 * 9_650_176 + 8 * 34_213_888
    facts = replace(BASE, shm=shm(worst + extra))
    assert ("nccl-shm-fallback" in _ids(facts, job(facts, gpus=8))) == fires


def test_vllm_behind_a_loader_that_takes_everything_is_told_none_is_free():
    facts = replace(BASE, shm=shm(512 * MiB))
    finding = _finding(facts, job(facts, serve="vllm", tensor_parallel_size=2), "shm-too-small")
    assert finding.message.endswith("queue: 160.00 MiB required, 0.00 MiB free')")  # not less than none


def test_ray_behind_a_loader_that_takes_everything_falls_back_and_fails_nothing():
    facts = replace(RAY_4G, shm=shm(512 * MiB))
    report = judge(facts, job(facts, ray_object_store=1 * GiB))
    too_small, ray = (
        next(f for f in report.findings if f.id == i) for i in ("shm-too-small", "ray-object-store-fallback")
    )
    # the loader's 900 MiB fail; Ray's 1 GiB store only goes to /tmp: said by its own warning, not as a failure
    assert too_small.message == (
        "this job needs 900 MiB of /dev/shm; 512 MiB is free: workers will fail with 'unable to allocate shared "
        "memory' or a bus error"
    )
    assert ray.message.startswith("Ray's object store (1 GiB) does not fit the 0 B of /dev/shm left:")
    assert not [f for f in ray.fixes if f.summary.startswith("cap Ray's")]  # nothing left to cap it at


def test_a_ray_store_over_10_gb_refuses_to_start_instead_of_falling_back():
    facts = replace(BASE, shm=shm(2 * GiB), memory=Memory(64 * GiB, 0))
    report = judge(facts, job(facts, loader=False, ray_object_store=20 * 10**9))
    [finding] = report.findings
    assert finding.id == "shm-too-small" and finding.message.endswith(
        "2 GiB is free: Ray refuses to start: its object store exceeds /dev/shm and is over 10 GB"
    )


@pytest.mark.parametrize(
    "server, says",
    [
        (Serving("triton", None, "tritonserver"), "Triton: each python-backend model instance maps a region (1 MiB,"),
        # 8 SHM connections (rings, 2 ranks × 4 channels) of 9,650,176 B and 2 proxy pools of 34,213,888 B: 139 MiB
        (Serving("tgi", None, "its default"), "TGI: its shards (one a GPU) talk through NCCL, which falls back to "),
        # (16 MiB + 1 + 2) × 10 + 2 × (24 MiB + 2) × 10 + (4 MiB + 1) × 6 = 696,254,540 B: 664 MiB
        (Serving("vllm", None, "--tensor-parallel-size $TP"), "vLLM: its tensor-parallel workers share broadcast "),
        # (4 MiB + 2) × 6 = 25,165,836 B: 24 MiB
        (Serving("sglang", None, "--tp $TP"), "SGLang: its tensor-parallel workers share broadcast rings (24 MiB at"),
    ],
)
def test_default_shm_tells_a_server_what_it_puts_there_and_what_to_say(server, says):
    facts = replace(BASE, target=Target("service", "server"), server=server, ml_signs=("image x",))
    message = _finding(facts, None, "default-shm").message
    assert message.startswith(f"/dev/shm is the default 64 MiB for {says}")
    assert {
        "triton": "triton_instances=N",
        "tgi": "/dev/shm where the GPUs are not P2P peers (139 MiB at 2 shards)",
        "vllm": "rings (664 MiB at 2) and NCCL beside them, and --tensor-parallel-size $TP is not a size. Give "
        "shmdoctor the tensor parallel size (--serve vllm --tensor-parallel-size N, or a shmdoctor.loader label "
        "serve=vllm,",
        "sglang": "and --tp $TP is not a size. Give shmdoctor the tensor parallel size (--serve sglang",
    }[server.name] in message


@pytest.mark.parametrize(
    "ipc, runtime, why",
    [
        (Ipc(json.loads('"none"')), "compose", " (--ipc=none)"),  # as a file's ipc: none is read, not a literal
        (Ipc("host"), "none", ""),  # a bare machine
        (Ipc("private"), "kubernetes", ""),
    ],
)
def test_no_shm_names_ipc_none_only_where_it_was_asked(ipc, runtime, why):
    facts = replace(BASE, shm=Shm(False, None, None, None, "none"), ipc=ipc, runtime=runtime)
    message = _finding(facts, seed(), "no-shm").message
    assert message == f"there is no /dev/shm{why}: DataLoader workers fail with FileNotFoundError"


def test_vllm_figures_are_said_to_the_hundredth_of_a_mib():
    # at tensor parallel 1024 the scheduler's ring is (16 MiB + 1 + 1024) × 10 = 167,782,490 B: 160.0098 MiB; the
    # loader's 900 MiB leave 100.5 MiB of 1000.5 MiB
    facts = replace(BASE, shm=shm(1000 * MiB + 512 * 1024))
    finding = _finding(facts, job(facts, serve="vllm", tensor_parallel_size=1024), "shm-too-small")
    assert finding.message.endswith("queue: 160.01 MiB required, 100.50 MiB free')")


@pytest.mark.parametrize(
    "consumers, fails",
    [
        (dict(gpus=8, nccl="shm"), "NCCL fails with 'unhandled system error' ('failed to extend /dev/shm/nccl-…')"),
        (dict(triton_instances=1000), "triton fails to create its shared memory"),  # 1000 regions of 1 MiB
    ],
)
def test_each_consumer_that_runs_out_fails_in_its_own_words(consumers, fails):
    facts = replace(BASE, shm=shm(512 * MiB))
    message = _finding(facts, job(facts, loader=False, **consumers), "shm-too-small").message
    assert message.endswith(f"of /dev/shm; 512 MiB is free: {fails}")  # nothing in use: no "of 512 MiB"


def test_findings_are_ordered_errors_first():
    # probe-incomplete (a warning) is registered before shm-too-small (an error)
    report = judge(replace(BASE, shm=shm(64 * MiB), unreadable=("ulimit -n (permission denied)",)), seed())
    severities = [f.severity for f in report.findings]
    assert severities[0] == "error" and severities[-1] == "warning"


@pytest.mark.parametrize(
    "changes",
    [
        dict(shm=Shm(False, None, None, None, "none"), ipc=Ipc("none")),
        dict(shm=shm(GiB, source="tmpfs", read_only=True)),
    ],
)
def test_without_dev_shm_the_way_out_is_loading_in_the_training_process(changes):
    [finding] = [f for f in judge(replace(BASE, **changes), seed()).findings if f.severity == "error"]
    assert finding.fixes[-1].loader == {"num_workers": 0}


def test_a_warning_offers_one_size_beside_its_own_ways_out():
    thin = _finding(replace(BASE, shm=shm(1 * GiB)), seed(), "thin-headroom")
    assert [f.shm_bytes for f in thin.fixes] == [1536 * MiB]  # 900 MiB × 1.25, the next nice size
    facts = replace(RAY_4G, shm=shm(1536 * MiB))
    ray = _finding(facts, job(facts, ray_object_store=1 * GiB), "ray-object-store-fallback")
    assert [f.summary.split(":")[0] for f in ray.fixes] == [
        "give /dev/shm 3 GiB",
        "cap Ray's object store at what fits",
    ]


def test_shm_too_small_says_of_what_size_the_free_part_is_where_some_is_in_use():
    facts = replace(BASE, shm=shm(512 * MiB, used=256 * MiB))
    message = _finding(facts, seed(), "shm-too-small").message
    assert message.startswith("this loader needs 900 MiB of /dev/shm; 256 MiB of 512 MiB is free: ")


@pytest.mark.parametrize(
    "target, said",
    [
        (Target("container", "t"), "it has 512 MiB (its use was not read)"),  # inspected from outside: use unseen
        (Target("service", "t"), "it has 512 MiB:"),  # a file: nothing runs yet, nothing in use
    ],
)
def test_shm_too_small_says_where_the_use_was_not_read(target, said):
    facts = replace(BASE, target=target, shm=Shm(True, 512 * MiB, None, None, "docker-shm"))
    message = _finding(facts, seed(), "shm-too-small").message
    assert said in message and message.count("not read") == said.count("not read")


def test_shm_on_disk_of_no_known_size_and_no_loader_asks_for_medium_memory_and_a_size_limit():
    facts = replace(BASE, shm=Shm(True, None, None, None, "k8s-emptydir-disk"), runtime="kubernetes")
    finding = _finding(facts, None, "shm-on-disk")
    assert [f.summary for f in finding.fixes] == [
        "make it memory-backed: emptyDir: {medium: Memory}, with a sizeLimit for your loader"
    ]
