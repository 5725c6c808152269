"""Each consumer names itself and gets its own dose (issue 35 items 3 and 5): PostgreSQL's error names one segment,
never its need; Chrome gets the size its docs ask and --disable-dev-shm-usage with its cost; a SemLock with no
/dev/shm mounted (AWS Lambda) is told there is none. Texts are quoted from tests/data/explain/cases.yaml's sources;
sizes are written here."""

from pathlib import Path

import pytest

from shmdoctor.diagnose import judge, scan_text
from shmdoctor.diagnose.place import elsewhere
from shmdoctor.sizes import GiB, MiB

POSTGRES = (  # docker-library/postgres#416
    'ERROR:  could not resize shared memory segment "/PostgreSQL.2088012784" to 50438144 bytes: No space left on device'
)
SELENIUM = "org.openqa.selenium.WebDriverException: unknown error: session deleted because of page crash"  # #528
LAMBDA = """    SemLock.__init__(self, SEMAPHORE, 1, 1, ctx=ctx)
  File "/var/lang/lib/python3.6/multiprocessing/synchronize.py", line 60, in __init__
    unlink_now)
OSError: [Errno 38] Function not implemented"""  # socklocks' README: AWS Lambda


def finding(text: str, place=None):
    scanned = scan_text(text)
    return judge(scanned.diagnoses(), place or elsewhere(scanned.clues), clues=scanned.clues).report.findings[0]


def test_postgresqls_segment_is_not_its_need_the_first_fix_gets_the_number_and_its_settings_take_less():
    found = finding(POSTGRES)
    assert "needs ≥" not in found.message and "one segment's" in found.message
    ask, host, fewer = found.fixes
    assert ask.shm_bytes is None and ask.summary.startswith("size /dev/shm for PostgreSQL: the segment its error")
    assert "shmdoctor run -- postgres" in ask.summary and host.ipc == "host"
    assert fewer.summary.startswith("fewer segments: max_parallel_workers_per_gather = 0") and fewer.caveat
    # in a 64 MiB place said, still never 'more than the 64 MiB + 25%' (96 MiB), nor the 48.1 MiB segment + 25%
    assert not any(f.shm_bytes for f in finding(POSTGRES, elsewhere(shm_bytes=64 * MiB)).fixes)


def test_chrome_gets_the_size_its_docs_ask_and_its_flag_with_the_cost():
    found = finding(SELENIUM)
    docs, ask, host, flag = found.fixes
    assert docs.shm_bytes == 2 * GiB and "docker-selenium's README" in docs.summary
    assert ask.summary.startswith("size /dev/shm for Chrome") and host.ipc == "host"
    assert flag.summary.startswith("Chrome's --disable-dev-shm-usage flag") and "slower" in (flag.caveat or "")
    assert "the tab crashed for another reason" in found.message  # its condition, not a mapped file's


def test_a_chrome_with_no_dev_shm_gets_one_of_its_docs_size_or_the_flag():
    text = "Creating shared memory in /dev/shm/.org.chromium.Chromium.x7kIrq failed: No such file or directory (2)"
    docs, flag = finding(text).fixes
    assert docs.shm_bytes == 2 * GiB and flag.summary.startswith("Chrome's --disable-dev-shm-usage")


def test_a_semaphore_with_no_dev_shm_mounted_is_told_there_is_none():
    (fix,) = finding(LAMBDA).fixes
    assert fix.summary.startswith("there is no /dev/shm: mount a tmpfs there") and "AWS Lambda" in fix.summary


# The general reader's consumers (issue 35 item 3): each named by its block, each told its own way to a size
JOBLIB = (  # joblib's memmapping folder in /dev/shm (its Parallel docs: temp_folder)
    "OSError: [Errno 28] No space left on device: '/dev/shm/joblib_memmapping_folder_1_abc/a.pkl'\n"
    '  File "/usr/lib/python3/site-packages/joblib/parallel.py", line 1056, in __call__'
)
PROMETHEUS = (  # goauthentik/authentik#16432's file, full instead of refused
    "OSError: [Errno 28] No space left on device: '/dev/shm/counter_2.db'"
)
BILLIARD = (  # celery/billiard#293, cut to its frames
    "OSError: [Errno 28] No space left on device\n"
    '  File "billiard/synchronize.py", line 182, in __init__\n'
    "    SemLock.__init__(self, SEMAPHORE, 1, 1, ctx=ctx)"
)


def test_joblib_is_told_its_memmaps_and_their_folder_on_disk_as_the_other_way():
    found = finding(JOBLIB)
    ask, _host, disk = found.fixes
    assert ask.summary.startswith("size /dev/shm for joblib") and "max_nbytes" in ask.summary
    assert "JOBLIB_TEMP_FOLDER=/tmp" in disk.summary and disk.caveat


def test_prometheus_client_is_told_its_files_a_process_and_the_dead_workers_to_remove():
    found = finding(PROMETHEUS)
    ask, _host, dead = found.fixes
    assert ask.summary.startswith("size /dev/shm for prometheus_client") and "1 MiB" in ask.summary
    assert "mark_process_dead" in dead.summary


def test_a_semaphores_enospc_says_something_else_filled_dev_shm_never_the_loaders_dose():
    found = finding(BILLIARD)
    assert found.fixes[0].summary.startswith("a Celery (billiard) pool's semaphores take a 4 KiB page")
    assert not any("loader" in f.summary for f in found.fixes)


# Debian's PostgreSQL 15 in a 64 MiB container, its parallel hash join's log as `docker logs` gave it (psql -e echoes
# the SETs; tests/integration/docker/test_explain_apps.py runs it, captured/README.md says how)
PG_CAPTURED = Path(__file__).resolve().parents[2] / "data" / "explain" / "captured" / "postgres-parallel-hash-64m.log"


def test_postgresqls_own_settings_in_the_log_size_one_parallel_hash_join_never_its_one_segment():
    found = finding(PG_CAPTURED.read_text())
    assert found.id == "postgres-shm-resize" and "one segment's" in found.message
    # nodeHash.c's bound: 256 MiB × hash_mem_multiplier 2 (15's default) × (4 workers + the leader) = 2.5 GiB, × 1.5
    # for dsa.c's doubling segments = 3.75 GiB; + 25% = 4.7 GiB: 6 GiB, where 16 MiB + 25% would fail again
    assert "one parallel hash join may take up to 3.75 GiB at the settings in the log" in found.message
    grow = found.fixes[0]
    assert grow.shm_bytes == 6 * GiB
    assert "work_mem 256 MiB × hash_mem_multiplier 2 (its default) × (4 workers + the leader)" in grow.summary
    assert "work_mem line 9" in grow.summary and "workers line 5" in grow.summary  # where each was read


@pytest.mark.parametrize(
    "settings, size",
    [
        # without a work_mem, no size: the segment's is not the need (item 5)
        ("SET max_parallel_workers_per_gather = 4;", None),
        # 64 MiB × 2 × (2 workers by default + 1) × 1.5 = 576 MiB; + 25%: 768 MiB
        ("SET work_mem TO '64MB';", 768 * MiB),
        # a postgresql.conf and EXPLAIN ANALYZE's count: 64 MiB × 1 × 9 × 1.5 = 864 MiB; + 25%: 1.5 GiB (3 GiB at 2)
        ("work_mem = 64MB\nhash_mem_multiplier = 1.0\n         Workers Launched: 8", 1536 * MiB),
        # postgres -c in kB (its unit where none is given); maintenance_work_mem is not work_mem
        ("postgres -c maintenance_work_mem=2GB -c work_mem=65536", 768 * MiB),
    ],
)
def test_postgresqls_settings_read_in_their_spellings(settings, size):
    fixes = finding(f"{settings}\n{POSTGRES}").fixes
    assert fixes[0].shm_bytes == size


@pytest.mark.parametrize(
    "work_mem, size",
    [
        # 256 TiB × 1 × (1 worker + 1) × 1.5 = 768 TiB, within limits.MAX_BYTES (1 PiB): + 25%, in whole GiB
        ("256TB", 960 * 2**40),
        # 512 TiB × 2 × 1.5 = 1.5 PiB: more than any machine has, no size (was --shm-size=1968000000000g at 1000 × 1025)
        ("512TB", None),
    ],
)
def test_a_bound_past_any_machine_from_postgresqls_settings_is_no_size(work_mem, size):
    settings = f"work_mem = {work_mem}\nhash_mem_multiplier = 1\nWorkers Launched: 1"
    assert finding(f"{settings}\n{POSTGRES}").fixes[0].shm_bytes == size


# Debian's Chromium 150 under its ChromeDriver in a 64 MiB container, a page rendered past it: the tab crashed
# (tests/integration/docker/test_explain_apps.py runs it, captured/README.md says how)
CHROME_CAPTURED = PG_CAPTURED.with_name("chromium-webdriver-tab-crash-64m.log")


def test_chromedrivers_tab_crash_is_chromes_shm_space_below_the_size_its_docs_ask_with_its_flag():
    found = finding(CHROME_CAPTURED.read_text())
    assert found.severity == "error" and "if /dev/shm where it ran was below 2 GiB" in found.message
    docs, _ask, _host, flag = found.fixes
    assert docs.shm_bytes == 2 * GiB and "docker-selenium's README" in docs.summary
    assert "Debian's /usr/bin/chromium adds it by itself where /dev/shm has less than 3.8 GB free" in flag.summary
