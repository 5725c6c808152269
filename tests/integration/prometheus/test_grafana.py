"""examples/grafana/shmdoctor-dashboard.json against the real thing: a real Prometheus (Debian's) scrapes the real
exporter reading a real container, and every query of every panel, its template variables substituted with that
container and that exporter, returns series (Grafana itself is not installable here: its part is the
substitution). The variables' own queries (label_values) are asked of Prometheus's label API."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.parse
import urllib.request

import pytest

from tests.helpers import REPO
from tests.integration.prometheus.exporting import Containers, binary, exporter, free_port
from tests.integration.prometheus.test_prometheus import _get, _query, _until, fill

pytestmark = pytest.mark.docker
DASHBOARD = json.loads((REPO / "examples" / "grafana" / "shmdoctor-dashboard.json").read_text())
SEED = "batch_size=100,num_workers=4,sample_bytes=1MiB"  # needs 900 MiB: (2·4 + 1) batches of 100 MiB
MiB = 2**20


def targets() -> list[tuple[str, str]]:
    """(panel title, query) of every panel."""
    return [(p["title"], t["expr"]) for p in DASHBOARD["panels"] for t in p["targets"]]


def substituted(expr: str, variables: dict[str, str]) -> str:
    """Grafana's part: $name of each template variable, a regex-matched label's value escaped as Grafana escapes one
    value (a regex, inside a PromQL string: backslashes doubled), and none left over."""
    for name, value in variables.items():
        expr = expr.replace(f"${name}", re.escape(value).replace("\\", "\\\\"))
    assert "$" not in expr, expr
    return expr


def test_the_dashboard_covers_what_the_exporter_says_and_links_the_alert_rules():
    queries = " ".join(expr for _, expr in targets())
    for metric in ("shm_used_bytes", "shm_size_bytes", "need_bytes", "finding", "oom_killed", "leaked_bytes"):
        assert f"shmdoctor_{metric}" in queries, metric
    assert {v["name"] for v in DASHBOARD["templating"]["list"]} == {"datasource", "instance", "container"}
    assert all(p["datasource"]["uid"] == "${datasource}" and p["targets"] for p in DASHBOARD["panels"])
    (rules,) = [link for link in DASHBOARD["links"] if "shmdoctor-rules.yml" in link["url"]]
    assert (REPO / "examples" / "prometheus" / "shmdoctor-rules.yml").exists() and rules["url"].endswith(
        "examples/prometheus/shmdoctor-rules.yml"
    )


def test_every_panel_query_returns_series_from_the_real_exporter(images, tmp_path):
    prometheus = binary("prometheus")
    with Containers() as c:
        # 64 MiB, 8 MiB of it written, a 1 GiB memory limit, and a loader that needs 900 MiB: every series there is
        name, _ = c.start(
            "grafana", "--shm-size=64m", "--memory=1g", "--label", f"shmdoctor.loader={SEED}", cmd=fill(8)
        )
        with exporter() as exp:
            port, instance = free_port(), exp.url.split("/")[2]
            config = tmp_path / "prometheus.yml"
            config.write_text(
                "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                f"scrape_configs: [{{job_name: shmdoctor, static_configs: [{{targets: [{json.dumps(instance)}]}}]}}]\n"
            )
            argv = [prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}"]
            server = subprocess.Popen(
                [*argv, f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            base = f"http://127.0.0.1:{port}"
            try:
                _until(
                    "the container's series, its need and its leaks read, in prometheus",
                    lambda: (
                        server.poll() is None
                        and _ready(base)
                        and all(
                            _query(base, f'shmdoctor_{m}{{container="{name}"}}') for m in ("need_bytes", "leaked_bytes")
                        )
                    ),
                    timeout=90,
                )
                assert server.poll() is None
                [need] = _query(base, f'shmdoctor_need_bytes{{container="{name}"}}')
                assert float(need["value"][1]) == 900 * MiB  # (2·4 + 1) × 100 × 1 MiB

                variables = {"instance": instance, "container": name}
                for title, expr in targets():
                    series = _query(base, substituted(expr, variables))
                    assert series, f"{title}: {expr}: no series"
                    labelled = [s["metric"]["container"] for s in series if "container" in s["metric"]]
                    assert set(labelled) <= {name}, f"{title}: {expr}: {labelled}"
                for variable in DASHBOARD["templating"]["list"][1:]:
                    label, values = _label_values(base, substituted(variable["definition"], variables))
                    assert variables[label] in values, (variable["name"], values)
            finally:
                server.terminate()
                server.wait(30)


def _ready(base: str) -> bool:
    try:
        return urllib.request.urlopen(f"{base}/-/ready", timeout=2).status == 200
    except OSError:
        return False


def _label_values(base: str, definition: str) -> tuple[str, list[str]]:
    """Grafana's label_values(SELECTOR, LABEL), asked as Prometheus's label API asks it."""
    m = re.fullmatch(r"label_values\((.+), (\w+)\)", definition)
    assert m, definition
    selector, label = m.groups()
    doc = _get(f"{base}/api/v1/label/{label}/values?" + urllib.parse.urlencode({"match[]": selector}))
    assert doc["status"] == "success"
    return label, doc["data"]
