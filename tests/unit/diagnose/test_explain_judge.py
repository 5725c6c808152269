"""The facts decide: the same text is /dev/shm in one place and 'not shared memory' in another. Facts come from
captured inspect JSON (tests/data/inspect) or are written out where the case is a machine's own numbers."""

import json
from dataclasses import replace
from pathlib import Path

from shmdoctor.diagnose import Exit, Measured, judge, scan_text
from shmdoctor.diagnose.place import elsewhere
from shmdoctor.loader import LoaderSpec
from shmdoctor.model import Facts, Ipc, Memory, Shm, Target
from shmdoctor.probe.docker import facts_from_inspect
from shmdoctor.sizes import GiB, MiB
from shmdoctor.workload import Workload

INSPECT = Path(__file__).resolve().parents[2] / "data" / "inspect"
BUS = "RuntimeError: DataLoader worker (pid 13) is killed by signal: Bus error."
NCCL = "NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details)"


def inspected(name: str) -> Facts:
    info = json.loads((INSPECT / f"{name}.json").read_text())
    return facts_from_inspect(info[0] if isinstance(info, list) else info).facts


def machine(size: int, used: int = 0, limit: int | None = None) -> Facts:
    shm = Shm(True, size, used, size - used, "system")
    return Facts(Target("local", "gpu-node"), shm, Ipc("host"), Memory(limit, 1 * GiB), runtime="none")


def causes(text: str, facts: Facts, **kw) -> list[str]:
    return [d.cause for d in judge(scan_text(text).diagnoses(), facts, **kw).diagnoses]


def test_a_bus_error_in_a_64_mib_container_is_shm_space_and_the_fix_names_a_size_to_compute():
    ex = judge(scan_text(BUS).diagnoses(), inspected("default"))
    assert [d.cause for d in ex.diagnoses] == ["shm-space"] and ex.exit_code == 1
    assert ex.report.findings[0].fixes[1].ipc == "host"


def test_a_bus_error_with_64_gib_free_is_not_shared_memory():
    ex = judge(scan_text(BUS).diagnoses(), machine(64 * GiB))
    assert [d.cause for d in ex.diagnoses] == ["not-shm"] and ex.exit_code == 0
    assert "64 GiB free" in ex.diagnoses[0].reason


def test_the_loader_decides_when_given():
    from shmdoctor.loader import loader_config, requirement

    need = requirement(loader_config(batch_size=100, num_workers=4, sample_bytes="1MiB"))
    assert causes(BUS, machine(2 * GiB), need=need) == ["not-shm"]  # 900 MiB fits 2 GiB free
    ex = judge(scan_text(BUS).diagnoses(), inspected("default"), need=need)
    assert ex.diagnoses[0].cause == "shm-space"
    assert ex.report.findings[0].fixes[0].shm_bytes == 1536 * MiB


def test_unambiguous_text_stands_whatever_the_facts():
    text = "RuntimeError: unable to allocate shared memory(shm) for file </torch_8_1_0>: No space left on device (28)"
    assert causes(text, machine(64 * GiB)) == ["shm-space"]


def test_nccl_system_error_is_shm_in_a_64_mib_place_stated_ambiguous_here_and_not_in_a_big_one():
    assert causes(NCCL, inspected("default")) == ["ambiguous"]  # a container's facts: not decided on its size alone
    assert causes(NCCL, inspected("shm2g")) == ["not-shm"]
    assert causes(NCCL, elsewhere()) == ["ambiguous"]
    assert causes(NCCL, elsewhere(shm_bytes=64 * MiB)) == ["shm-space"]  # the user says 64 MiB where it ran
    fixes = judge(scan_text(NCCL).diagnoses(), elsewhere(shm_bytes=64 * MiB)).report.findings[0].fixes
    assert (fixes[0].shm_bytes, fixes[0].ipc) == (3 * GiB, None)  # 8 ranks all-to-all, 1.8 GiB + 25%
    assert any(f.env == (("NCCL_SHM_DISABLE", "1"),) for f in fixes)


def test_a_segment_nccl_names_is_one_of_many_never_its_need():
    """ai-dynamo/dynamo#1408's segment (31.5 MiB) in a 64 MiB container: the fix was --shm-size=64m, the size that
    failed. NCCL's whole need for the job's GPUs is asked, the figures for 2 and 8 where nothing tells their number."""
    text = "NCCL WARN Error while creating shared memory segment /dev/shm/nccl-roxxN4 (size 33030528), error: x"
    finding = judge(scan_text(text).diagnoses(), inspected("default")).report.findings[0]
    assert finding.fixes[0].shm_bytes == 3 * GiB  # 8 GPUs with all-to-all: 1.8 GiB + 25%
    assert "139 MiB for 2 local GPUs, 813 MiB for 8" in finding.message and "--gpus N" in finding.message
    # the log names two ranks (NCCL's init line): two H200s' measured 139 MiB + 25%, the size that then ran
    log = scan_text("h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1 - Init COMPLETE\n" + text)
    finding = judge(log.diagnoses(), inspected("default"), clues=log.clues).report.findings[0]
    assert finding.fixes[0].shm_bytes == 192 * MiB and "for 2 local GPUs (the log: NCCL's nranks)" in finding.message
    assert [f.env for f in finding.fixes[2:]] == [(("NCCL_SHM_DISABLE", "1"),), (("NCCL_CUMEM_HOST_ENABLE", "1"),)]
    assert "proxy pool" in finding.fixes[2].caveat
    # --gpus says it where the log does not
    gpus8 = judge(scan_text(text).diagnoses(), inspected("default"), gpus=8).report.findings[0]
    assert gpus8.fixes[0].shm_bytes == 1 * GiB  # 813 MiB + 25%


def test_a_log_from_elsewhere_gets_a_size_said_in_every_form_that_may_have_run_it():
    text = "NCCL WARN Error while creating shared memory segment /dev/shm/nccl-roxxN4 (size 9637888), error: x"
    fix = judge(scan_text(text).diagnoses(), elsewhere(), gpus=2).report.findings[0].fixes[0]
    # NCCL's 139 MiB for two GPUs × 1.25 = 174 MiB, rounded up to 192 MiB
    assert fix.shm_bytes == 192 * MiB and "where it ran" in fix.summary
    assert all(form in fix.summary for form in ("--shm-size", "shm_size", "emptyDir", "sharedMemorySize"))


def test_a_size_is_never_at_or_below_the_dev_shm_the_text_says_failed():
    # vLLM asked 1 MiB with 0.5 MiB free: the need is more than what there was
    text = "RuntimeError: Insufficient space in /dev/shm for psm_1: 1.0 MiB required, 60.0 MiB free. Increase it"
    finding = judge(scan_text(text).diagnoses(), inspected("default")).report.findings[0]
    assert "needs ≥ 61 MiB" in finding.message and finding.fixes[0].shm_bytes > 60 * MiB


def test_ray_gets_its_own_size_and_an_object_store_that_fits():
    text = (
        "WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only 67108864 bytes "
        "available. You can increase /dev/shm size by passing '--shm-size=5.04gb' to 'docker run'"
    )
    fixes = judge(scan_text(text).diagnoses(), inspected("default")).report.findings[0].fixes
    assert fixes[0].shm_bytes == 8 * GiB  # 5.04 GiB (Ray's own) + 25%
    assert "--object-store-memory=53686272" in fixes[-1].summary  # 80% of the 64 MiB there was, page-rounded down


def test_a_loader_failure_without_its_settings_asks_the_one_thing_to_know_never_more_than_it_had():
    """No number in the text (issue 35 item 5): not 'more than the 64 MiB it died in + 25%' (96 MiB, which dies again
    for any loader of common settings), but what gives the exact size first, then the host's /dev/shm."""
    fixes = judge(scan_text(BUS).diagnoses(), inspected("default")).report.findings[0].fixes
    assert "--batch-size B" in fixes[0].summary and "shmdoctor run" in fixes[0].summary
    assert fixes[1].ipc == "host" and not any(f.shm_bytes for f in fixes)
    enospc = "RuntimeError: unable to allocate shared memory(shm) for file </torch_8_1_0>: No space left on device (28)"
    fixes = judge(scan_text(enospc).diagnoses(), machine(64 * GiB)).report.findings[0].fixes
    assert fixes[0].shm_bytes is None and "--batch-size B" in fixes[0].summary


def test_an_oom_kill_the_engine_saw_is_memory_limit_without_any_text():
    ex = judge((), inspected("oom"), ended=Exit(137, True, "the engine (State.ExitCode)"))
    assert [(d.signature, d.cause) for d in ex.diagnoses] == [("container-oom-killed", "memory-limit")]
    assert ex.exit_code == 1 and ex.report.findings[0].fixes[0].memory_bytes


def test_a_sigkill_the_engine_did_not_count_as_oom_is_not_shared_memory():
    ex = judge(scan_text("Killed").diagnoses(), inspected("memory"), ended=Exit(137, False, "the engine (x)"))
    assert {d.cause for d in ex.diagnoses} == {"not-shm"} and ex.exit_code == 0


def test_killed_without_a_memory_limit_is_not_shared_memory():
    assert causes("Killed", machine(64 * MiB)) == ["not-shm"]


def test_killed_under_a_limit_smaller_than_shm_is_memory_limit():
    assert causes("Killed", inspected("memory")) == ["memory-limit"]  # 2 GiB /dev/shm, 700 MiB limit


def test_killed_with_a_tiny_shm_under_a_big_limit_is_not_shared_memory():
    assert causes("Killed", machine(64 * MiB, limit=16 * GiB)) == ["not-shm"]


def test_measured_peak_decides_a_bus_error():
    filled = Measured(peak_bytes=64 * MiB, size_bytes=64 * MiB, peak_t=1.0, elapsed=4.2)
    never = Measured(peak_bytes=3 * MiB, size_bytes=64 * MiB, peak_t=1.0, elapsed=4.2)
    ex = judge(scan_text(BUS).diagnoses(), inspected("default"), measured=filled)
    assert ex.diagnoses[0].cause == "shm-space" and "3.2 s before the end" in ex.diagnoses[0].reason
    assert causes(BUS, machine(64 * GiB), measured=filled) == ["shm-space"]
    # not seen full proves nothing (a fill and a SIGBUS within 0.3 s, seen in a container): the facts decide
    unseen = judge(scan_text(BUS).diagnoses(), inspected("default"), measured=never).diagnoses[0]
    assert unseen.cause == "shm-space" and "between two samples" in unseen.reason
    assert causes(BUS, machine(64 * GiB), measured=never) == ["not-shm"]


def test_no_shm_turns_a_space_error_into_missing():
    facts = inspected("ipcnone")
    assert causes(BUS, replace(facts, shm=replace(facts.shm, present=False))) == ["shm-missing"]


def test_a_sigbus_exit_alone_is_diagnosed():
    ex = judge((), inspected("default"), ended=Exit(135, None, "the child"))
    assert [(d.signature, d.cause) for d in ex.diagnoses] == [("exit-sigbus", "shm-space")]


def test_a_clean_exit_or_an_error_exit_diagnoses_nothing():
    assert judge((), inspected("default"), ended=Exit(0)).diagnoses == ()
    assert judge((), inspected("default"), ended=Exit(1)).exit_code == 0


def test_a_certain_text_whose_need_fits_here_says_the_log_comes_from_elsewhere():
    from shmdoctor.loader import LoaderSpec

    need = LoaderSpec(batch_size=100, num_workers=4, sample_bytes="1MiB").requirement()
    text = "RuntimeError: unable to allocate shared memory(shm) for file </torch_8_1_0>: No space left on device (28)"
    ex = judge(scan_text(text).diagnoses(), machine(64 * GiB), need=need)
    finding = ex.report.findings[0]
    assert ex.diagnoses[0].cause == "shm-space" and "the log comes from a place with less" in finding.message
    # the size where it ran, and the host's /dev/shm with its caveat; no loader cut where it fits
    assert [(f.shm_bytes, f.ipc) for f in finding.fixes] == [(1536 * MiB, None), (None, "host")]


def test_a_segment_nccl_could_not_have_asks_for_all_of_ncclss_shm_where_its_gpus_are_known():
    """Two H200s in a 32 MiB /dev/shm, P2P and cuMem off (docs/gpu-nccl.md, under `shmdoctor run`): NCCL failed at
    one 9.2 MiB segment with 27.6 MiB in use; its whole need is 139 MiB, and 192m is the size that then ran."""
    text = (
        "misc/shmutils.cc:132 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-GAxtlc "
        "(size 9637888), error: No space left on device (28)"
    )
    env = (("NCCL_P2P_DISABLE", "1"), ("NCCL_CUMEM_ENABLE", "0"))
    there = replace(machine(32 * MiB), gpu_count=2, nccl_env=env)
    measured = Measured(peak_bytes=28_940_697, size_bytes=32 * MiB, peak_t=3.8, elapsed=4.3)
    fixes = judge(scan_text(text).diagnoses(), there, measured=measured).report.findings[0].fixes
    assert fixes[0].shell == "mount -o remount,size=192m /dev/shm", fixes[0]  # a machine: its /dev/shm grows
    alone = judge(scan_text(text).diagnoses(), machine(32 * MiB), measured=measured).report.findings[0].fixes
    assert alone[0].shell == "mount -o remount,size=3g /dev/shm"  # no GPUs known: 8 with all-to-all, not the segment


def test_a_size_above_1_pib_in_a_log_is_said_implausible_and_never_a_fix():
    text = f"NCCL WARN Error: failed to extend /dev/shm/nccl-Ab12Cd to {10**30} bytes, error: No space left on device"
    ex = judge(scan_text(text).diagnoses(), inspected("default"))
    (d,) = ex.diagnoses
    assert d.signature == "nccl-shm-extend" and d.bytes_needed is None and "more than 1 PiB" in d.reason
    assert "more than 1 PiB" in ex.report.findings[0].message
    sizes = [f.shm_bytes for f in ex.report.findings[0].fixes if f.shm_bytes]
    assert sizes and all(size < 8 * GiB for size in sizes)  # NCCL's own need (1.8 GiB + 25%), not 10^30 bytes


def test_malformed_numbers_in_a_log_are_no_match():
    for bad in ("1.2.3", "1..5", "9" * 400, "9" * 5000, "１２"):
        text = f"Insufficient space in /dev/shm for buf: {bad} MiB required, 1.0 MiB free. Increase /dev/shm"
        assert scan_text(text).diagnoses() == (), bad


def test_every_nccl_prescription_of_the_corpus_holds_ncclss_measured_two_rank_need():
    """Each real NCCL log of the corpus, judged in a 64 MiB container: the size asked is at least what two H200s
    measured NCCL to take (145,629,184 B, docs/gpu-nccl.md), whatever segment the log names."""
    import yaml

    data = Path(__file__).resolve().parents[2] / "data" / "explain"
    cases = yaml.safe_load((data / "cases.yaml").read_text()) + yaml.safe_load((data / "harvested.yaml").read_text())
    asked = []
    for case in cases:
        if case.get("consumer") != "nccl" or case["cause"] != "shm-space" or "text" not in case:
            continue
        log = scan_text(case["text"])
        findings = judge(log.diagnoses(), inspected("default"), clues=log.clues).report.findings
        asked += [max(f.shm_bytes or 0 for f in finding.fixes) for finding in findings if finding.severity == "error"]
    assert len(asked) >= 10 and min(asked) >= 145_629_184, asked


def test_triton_asks_a_step_more_than_the_pool_it_could_not_grow_and_its_own_setting():
    grow = (
        "Failed to increase the shared memory pool size for key 'triton_python_backend_shm_region_2' to 67108864 "
        "bytes. If you are running Triton inside docker, use '--shm-size' flag to control the shared memory region "
        "size. Error: No space left on device"
    )
    (d,) = scan_text(grow).diagnoses()
    assert d.bytes_needed == 64 * MiB + 1 * MiB  # the pool it had, and the least step it grows by
    sigbus = "(RayWorker pid=1) *** SIGBUS received at time=1692931519 on cpu 3 ***"
    fixes = judge(scan_text(sigbus).diagnoses(), inspected("default")).report.findings[0].fixes
    assert fixes[0].summary.startswith("size /dev/shm for Ray's object store: its object_store_memory + 10%")
    assert not any(f.shm_bytes for f in fixes)  # never more than the 64 MiB it had + 25%


def test_a_worker_gone_without_a_word_with_plenty_of_dev_shm_is_the_oom_killer_or_a_crash():
    text = "RuntimeError: DataLoader worker (pid(s) 25) exited unexpectedly"
    (d,) = judge(scan_text(text).diagnoses(), machine(64 * GiB)).diagnoses
    assert d.cause == "not-shm" and "the OOM killer (dmesg says) or a crash" in d.reason
    (d,) = judge(scan_text(text).diagnoses(), inspected("default")).diagnoses
    assert d.cause == "shm-space"  # 64 MiB: a full /dev/shm is the likelier


def test_after_a_death_under_run_the_size_is_above_the_one_that_failed():
    """A 64 MiB container (inspected) where run saw the death: with a need that fit in it, the size asked is still
    more than 64 MiB (64 × 1.25 = 80 MiB, rounded up to 96 MiB), never the 64 MiB; with nothing known of the need,
    no size at all: the loader's settings are what give it."""
    enospc = "RuntimeError: unable to allocate shared memory(shm) for file </torch_9_1_0>: No space left on device (28)"
    died = Measured(peak_bytes=1 * MiB, size_bytes=64 * MiB, peak_t=1.0, elapsed=2.0)
    need = Workload(LoaderSpec(batch_size=1, num_workers=1, sample_bytes=MiB)).requirement()
    ex = judge(scan_text(enospc).diagnoses(), inspected("default"), measured=died, need=need)
    grow = ex.report.findings[0].fixes[0]
    assert grow.shm_bytes == 96 * MiB and "more than the 64 MiB it died in" in grow.summary, grow
    ex = judge(scan_text(enospc).diagnoses(), inspected("default"), measured=died)
    ask = ex.report.findings[0].fixes[0]
    assert ask.shm_bytes is None and "--batch-size B" in ask.summary


def test_the_kernels_oom_report_gives_the_limit_that_was_hit_and_dev_shms_share_of_it():
    """dd filling /dev/shm in docker run --memory=64m --shm-size=256m, its dmesg captured here: the limit hit (65536kB)
    and the cgroup's shmem (65,458,176 B) are read, wherever explain runs: a memory limit above the one hit, holding
    that /dev/shm and a process (max(64 MiB, 62.4 MiB + 256 MiB) × 1.25 = 398 MiB, rounded up to 512 MiB)."""
    log = scan_text((INSPECT.parent / "explain" / "captured" / "kernel-oom-shm-fill.log").read_text())
    assert (log.clues.memory_limit, log.clues.shmem) == (64 * MiB, 65_458_176)
    for here in (machine(64 * GiB), inspected("default")):
        finding = judge(log.diagnoses(), here, clues=log.clues).report.findings[0]
        grow, bound = finding.fixes
        assert grow.memory_bytes == 512 * MiB and "more than the 64 MiB limit that was hit (read" in grow.summary
        assert bound.summary.startswith("size /dev/shm below the memory limit: it held 62.4 MiB of the 64 MiB")
    # cgroup v1 without a limit prints 9007199254740988kB; kmem's and memory+swap's own lines are not the limit
    unlimited = "memory: usage 1024kB, limit 9007199254740988kB, failcnt 0\nkmem: usage 496kB, limit 2048kB, failcnt 0"
    assert scan_text(unlimited).clues.memory_limit is None


def test_a_size_made_without_the_loaders_settings_says_where_its_need_comes_from():
    """Read: the size a text states; NCCL's measured model for the GPUs the log names; inferred: nothing tells."""
    vllm = "Insufficient space in /dev/shm for psm_1: 161.0 MiB required, 60.2 MiB free. Increase /dev/shm"
    (grow, *_) = judge(scan_text(vllm).diagnoses(), inspected("default")).report.findings[0].fixes
    assert grow.shm_bytes == 256 * MiB and grow.summary.endswith(": 161 MiB needed (read from the log) + 25%")
    log = scan_text(
        "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1 - Init COMPLETE\n"
        "h:1:2 [0] NCCL WARN Error while creating shared memory segment /dev/shm/nccl-x (size 9637888)"
    )
    (grow, *_) = judge(log.diagnoses(), inspected("default"), clues=log.clues).report.findings[0].fixes
    assert "139 MiB needed (NCCL's measured model for 2 local GPUs, their number from the log: NCCL's nranks)" in (
        grow.summary
    )
    (ask, *_) = judge(scan_text(BUS).diagnoses(), inspected("default")).report.findings[0].fixes
    assert ask.shm_bytes is None and ask.summary.startswith("size /dev/shm for the loader")
