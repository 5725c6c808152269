#!/usr/bin/env bash
# The whole test run on a fresh Debian 12 machine, as root: venv, linters, the manual's build, the fast lane without
# torch, Docker engine, test images, pytest. Idempotent: each step is skipped when already done. Extra arguments go to
# the last pytest. A lint or docs failure fails the run before anything slow starts.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
echo "== installing shmdoctor with torch==2.13.0"
.venv/bin/pip install -q -e '.[test,bench,plot,docs]' torch==2.13.0

echo "== lint"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy  # what and how strictly: [tool.mypy] in pyproject.toml

echo "== docs"  # the manual (mkdocs.yml): a broken link or anchor, or a page outside the nav, fails the build
site=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$site"
rm -rf "$site"

# The fast lane's promise, proven: its own venv without torch (the test extra only), no engine reachable.
if [ ! -x .venv-fast/bin/python ]; then python3 -m venv .venv-fast; fi
.venv-fast/bin/pip install -q -e '.[test]'
if .venv-fast/bin/python -c 'import torch' 2>/dev/null; then echo "torch in .venv-fast: remove .venv-fast" >&2; exit 1; fi
echo "== fast lane: no torch, no engine"
DOCKER_HOST=unix:///nonexistent/docker.sock .venv-fast/bin/python -m pytest -m "not docker and not torch" -q

need_pkgs=()
command -v dockerd >/dev/null || need_pkgs+=(docker.io)
dpkg -s busybox-static >/dev/null 2>&1 || need_pkgs+=(busybox-static)
command -v debootstrap >/dev/null || need_pkgs+=(debootstrap)
[ -x /usr/sbin/sshd ] || need_pkgs+=(openssh-server)  # audit over DOCKER_HOST=ssh:// against a loopback sshd
command -v podman >/dev/null || need_pkgs+=(podman)  # check inside Podman, audit through its Docker API
command -v newuidmap >/dev/null || need_pkgs+=(uidmap)
command -v docker-compose >/dev/null || need_pkgs+=(docker-compose)  # lint's compose fixes, run for real
command -v strace >/dev/null || need_pkgs+=(strace)  # lint --fix's fsync before its rename
# the exporter's tests start their own prometheus on loopback; promtool checks examples/prometheus/ (same package)
{ command -v prometheus && command -v promtool; } >/dev/null || need_pkgs+=(prometheus)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "== installing ${need_pkgs[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

# The engine answers: `docker version` asks the server its version only (`docker info` can stall for minutes on a
# busy engine); a timeout so that a wedged engine is an error, not a hang.
engine_up() { timeout 60 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }
if ! engine_up; then
  echo "== starting dockerd"
  nohup dockerd --iptables=false --bridge=none >/var/log/shmdoctor-dockerd.log 2>&1 &
  for _ in $(seq 60); do engine_up && break; sleep 1; done
  engine_up || { tail -20 /var/log/shmdoctor-dockerd.log; exit 1; }
fi

echo "== test images"
bash scripts/build-test-images.sh

echo "== pytest"
exec .venv/bin/python -m pytest "$@"
