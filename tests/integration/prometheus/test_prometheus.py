"""A real Prometheus (Debian's package) scrapes the exporter on loopback and evaluates examples/prometheus/'s
rules: its query API returns the series of the test's running containers, and its alert for a /dev/shm at 95% is
pending while the one at 10% has none."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from tests.helpers import REPO
from tests.integration.prometheus.exporting import RUN, Containers, binary, by_container, df_used, exporter, free_port

pytestmark = pytest.mark.docker
MiB = 2**20
INTERVAL = 1  # seconds between scrapes
RULES = REPO / "examples" / "prometheus" / "shmdoctor-rules.yml"


def fill(mib: int) -> tuple[str, ...]:
    return ("sh", "-c", f"dd if=/dev/zero of=/dev/shm/fill bs=1M count={mib} 2>/dev/null; sleep 600")


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def _query(base: str, promql: str) -> list[dict]:
    doc = _get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql}))
    assert doc["status"] == "success", doc
    return doc["data"]["result"]


def _until(what: str, check, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s"
        time.sleep(0.5)


def test_prometheus_scrapes_the_exporter_and_evaluates_the_example_rules(images, tmp_path):
    prometheus = binary("prometheus")
    with Containers() as c:
        full, _ = c.start("prom-full", "--shm-size=64m", cmd=fill(61))  # 95%
        light, _ = c.start("prom-light", "--shm-size=64m", cmd=fill(6))  # 10%
        with exporter() as exp:
            _until(
                "the containers' own writes",
                lambda: by_container(exp.scrape(), "shmdoctor_shm_used_bytes").get(full, 0) >= 61 * MiB,
            )
            port = free_port()
            config = tmp_path / "prometheus.yml"
            config.write_text(
                f"global: {{scrape_interval: {INTERVAL}s, evaluation_interval: {INTERVAL}s}}\n"
                f"rule_files: [{json.dumps(str(RULES))}]\n"
                "scrape_configs:\n"
                "  - job_name: shmdoctor\n"
                f"    static_configs: [{{targets: [{json.dumps(exp.url.split('/')[2])}]}}]\n"
            )
            server = subprocess.Popen(
                [
                    prometheus,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={tmp_path / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            base = f"http://127.0.0.1:{port}"
            try:

                def ready():
                    assert server.poll() is None, server.communicate()[1][-2000:]
                    try:
                        return urllib.request.urlopen(f"{base}/-/ready", timeout=2).status == 200
                    except OSError:
                        return False

                _until("prometheus ready", ready)
                time.sleep(2 * INTERVAL)  # two scrape intervals
                series = _until(
                    "both containers' series in prometheus",
                    lambda: (
                        (r := _query(base, f'shmdoctor_shm_used_bytes{{container=~"{RUN}-prom-.*"}}'))
                        and len(r) == 2
                        and r
                    ),
                )
                used = {s["metric"]["container"]: float(s["value"][1]) for s in series}
                assert used == {full: df_used(full), light: df_used(light)}
                [up] = _query(base, 'up{job="shmdoctor"}')
                assert up["value"][1] == "1"
                assert _query(base, f'shmdoctor_finding{{container="{full}",id="shm-full"}}')

                # The example rules load and evaluate; ShmNearlyFull (for: 5m) is pending for the full one only.
                groups = _get(f"{base}/api/v1/rules")["data"]["groups"]
                assert {r["health"] for g in groups for r in g["rules"]} == {"ok"}
                alerts = _until(
                    "ShmNearlyFull pending",
                    lambda: [
                        a
                        for a in _get(f"{base}/api/v1/alerts")["data"]["alerts"]
                        if a["labels"]["alertname"] == "ShmNearlyFull"
                        and a["labels"].get("container", "").startswith(RUN)
                    ],
                )
                assert [(a["labels"]["container"], a["state"]) for a in alerts] == [(full, "pending")]
            finally:
                server.terminate()
                server.wait(30)
