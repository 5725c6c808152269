"""What puts a bus error or a crash off /dev/shm, read in its block (diagnose/reader.py's elsewhere contexts): a flag
that moves the consumer's shared-memory files (Chromium's --disable-dev-shm-usage, as given, not named in prose), a
disk said full, initdb at its smallest main segment (PostgreSQL's, not /dev/shm); said not-shm with why, of a known
text and of a reading alike. And the consumers' frames that prove a bus error or a crash beside them (Mars, UCX's
shared-memory transport), and plasma's words, which name no consumer of their own."""

import json

import pytest

from shmdoctor.diagnose import scan_text
from tests.helpers import forked_cli


def _said(log: str) -> list[tuple[str, str, str]]:
    return [(d.signature, d.cause, d.consumer) for d in scan_text(log).diagnoses()]


# Puppeteer's troubleshooting page (launch args), Selenium's ChromeOptions, a shell's command line: the flag as given
FLAG_GIVEN = {
    "Puppeteer's args": "const browser = await puppeteer.launch({args: ['--no-sandbox', '--disable-dev-shm-usage']});\n"
    "Error: Page crashed!\n    at Page._onTargetCrashed (node_modules/puppeteer/lib/Page.js:215:24)",
    "Selenium's add_argument": 'options.add_argument("--disable-dev-shm-usage")\n'
    "selenium.common.exceptions.WebDriverException: Message: unknown error: session deleted because of page crash",
    "a command line, read crash": "chromium --headless --no-sandbox --disable-dev-shm-usage --dump-dom https://x\n"
    "Renderer process crashed",
}


@pytest.mark.parametrize("log", FLAG_GIVEN.values(), ids=FLAG_GIVEN.keys())
def test_chromium_given_disable_dev_shm_usage_crashes_elsewhere(log):
    (d,) = scan_text(log).diagnoses()
    assert (d.cause, d.consumer) == ("not-shm", "chromium")
    assert d.reason.startswith("Chromium's --disable-dev-shm-usage (line 1): ") and "/tmp" in d.reason


def test_the_flag_named_in_prose_or_beside_another_consumer_moves_nothing():
    """cypress-io/cypress#350's shape: 'tried adding' it, where it had not taken; a DataLoader's bus error is its
    own."""
    prose = "have tried adding `--disable-dev-shm-usage` but we're seeing 'Chromium renderer process crashed'"
    assert _said(prose) == [("read-browser-crash", "shm-space", "chromium")]
    loader = "add_argument('--disable-dev-shm-usage')\nDataLoader worker (pid 7) is killed by signal: Bus error."
    assert _said(loader) == [("torch-worker-killed-bus-error", "shm-space", "dataloader")]


def test_a_disk_said_full_puts_a_crash_or_a_bus_error_on_it_unless_the_block_says_shared_memory():
    assert _said("Bus error (core dumped)\nthe root disk is full (df: / 100%)") == [
        ("shell-bus-error", "not-shm", "unknown")
    ]
    tab = "with not enough root filesystem disk space Chrome's renderer crashed"
    assert _said(tab) == [("read-browser-crash", "not-shm", "chromium")]
    shm = "Bus error (core dumped)\nthe disk is full, and so was /dev/shm"
    assert _said(shm) == [("shell-bus-error", "shm-space", "unknown")]


INITDB = """selecting dynamic shared memory implementation ... posix
selecting default max_connections ... {conns}
selecting default shared_buffers ... {buffers}
creating configuration files ... ok
running bootstrap script ... Bus error (core dumped)
child process exited with exit code 135
initdb: removing contents of data directory "/var/lib/postgresql/data"
"""


@pytest.mark.parametrize("buffers", ["400kB", "128MB"])
def test_a_bus_error_of_a_server_initdb_starts_is_its_main_segment_not_dev_shm(buffers):
    """initdb.c's trial_bufs end at 50 buffers (400kB): every trial start failed; its bootstrap, whatever it chose,
    maps the main segment (huge pages in a pod, as kubernetes#71233 and kubegres#132 found), not /dev/shm."""
    found = scan_text(INITDB.format(conns=20, buffers=buffers)).diagnoses()
    assert {(d.cause, d.consumer) for d in found} == {("not-shm", "postgresql")} and len(found) == 2
    assert all("initdb's start of the server (line " in d.reason for d in found)


def test_initdbs_trial_start_dying_of_a_bus_error_is_the_main_segment():
    """initdb.c test_config_settings' command, each trial killed (CrunchyData/postgres-operator's shape)."""
    trial = (
        'sh: line 1:   153 Bus error               (core dumped) "/usr/pgsql-13/bin/postgres" --boot -x0 -F -c '
        "max_connections=100 -c shared_buffers=1000 -c dynamic_shared_memory_type=posix < /dev/null > /dev/null 2>&1"
    )
    assert _said(trial) == [("shell-bus-error", "not-shm", "postgresql")]


def test_a_bus_error_of_a_running_servers_parallel_worker_stays_dev_shms():
    """The server's log, not initdb's: a parallel worker's segment in /dev/shm (docker-library/postgres#416's kind)."""
    log = 'LOG:  background worker "parallel worker" (PID 4242) was terminated by signal 7: Bus error\n'
    log += "DETAIL:  Failed process was running: SELECT count(*) FROM big JOIN big b USING (id)"
    assert _said(log) == [("read-shm-bus-error", "shm-space", "postgresql")]


def test_the_cli_says_not_shared_memory_with_why_and_exits_0():
    proc = forked_cli("explain", "--format", "json", input_text=FLAG_GIVEN["Puppeteer's args"])
    assert proc.returncode == 0, proc.stderr
    (d,) = json.loads(proc.stdout)["diagnoses"]
    assert (d["signature"], d["cause"]) == ("puppeteer-page-crash", "not-shm")
    text = forked_cli("explain", input_text=FLAG_GIVEN["Puppeteer's args"]).stdout
    assert "not shared memory: Chromium's --disable-dev-shm-usage (line 1)" in text


def test_consumers_frames_prove_a_bus_error_or_a_crash_beside_them():
    """Mars keeps its workers' data in shared memory (mars/worker/storage); UCX's mm transport is shared memory."""
    mars = 'Fatal Python error: Bus error\n  File "/opt/conda/lib/python3.7/site-packages/mars/worker/storage/core.py"'
    assert _said(mars) == [("read-shm-bus-error", "shm-space", "unknown")]
    ucx = "[gpu3:88:0] Caught signal 11 (Segmentation fault: address not mapped)\n 1 0x1a2b uct_mm_iface_t_init()"
    assert _said(ucx) == [("read-shm-crash", "shm-space", "unknown")]
    assert _said("Fatal Python error: Bus error\nMars on the planet, a film") == []


def test_plasmas_words_name_ray_only_where_ray_is_in_the_block():
    """Arrow's plasma store.cc said it first (Mars ran it), Ray's raylet store_runner.cc after."""
    arrow = (
        "System memory request exceeds memory available in /dev/shm. The request is for\n"
        "<system_memory> bytes, and the amount available is <shm_mem_avail> bytes.\nwhen load is high in plasma store"
    )
    assert _said(arrow) == [("ray-plasma-request", "shm-space", "unknown")]
    ray = (
        "[2026-03-25 05:44:29,435 W 39 39] (raylet) store_runner.cc:83: System memory request exceeds memory "
        "available in /dev/shm. The request is for 10200547328 bytes, and the amount available is 9663676416 bytes."
    )
    (d,) = scan_text(ray).diagnoses()
    assert (d.consumer, d.bytes_needed, d.shm_bytes) == ("ray", 10200547328, 9663676416)
