#!/usr/bin/env bash
# Builds the images the tests run, once: no registry is reachable, so everything comes from Debian's packages,
# the host's torch wheel and PyPI. Each image is skipped when its tag exists already.
set -euo pipefail
CACHE=${SHMDOCTOR_CACHE:-/var/cache/shmdoctor}
HERE=$(cd "$(dirname "$0")/../tests/images" && pwd)
mkdir -p "$CACHE"

have() { docker image inspect "$1" >/dev/null 2>&1; }

if ! have shmdoctor-test/busybox:1; then
  ctx=$(mktemp -d); cp /bin/busybox "$ctx/busybox"
  docker build -q -t shmdoctor-test/busybox:1 -f "$HERE/busybox.Dockerfile" "$ctx"
  rm -rf "$ctx"
fi

if ! have shmdoctor-test/debian:bookworm; then
  root="$CACHE/bookworm"
  if [ ! -x "$root/usr/bin/python3" ]; then
    rm -rf "$root"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
      bookworm "$root" http://deb.debian.org/debian >"$CACHE/debootstrap.log" 2>&1 \
      || { tail -20 "$CACHE/debootstrap.log"; exit 1; }
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  fi
  # The machine's CA bundle: package indexes here are reached through it.
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  tar -C "$root" -c . | docker import -c 'CMD ["/bin/bash"]' - shmdoctor-test/debian:bookworm
fi

if ! have shmdoctor-test/python:1; then
  ctx=$(mktemp -d); mkdir "$ctx/wheels"
  pip download -q --no-deps --only-binary=:all: torch==2.13.0 -d "$ctx/wheels"
  docker build -q --network host --build-arg BASE=shmdoctor-test/debian:bookworm \
    -t shmdoctor-test/python:1 -f "$HERE/python.Dockerfile" "$ctx"
  rm -rf "$ctx"
fi

# Podman's store is its own: the same busybox and Debian root filesystems, imported (no registry, no RUN step).
if command -v podman >/dev/null; then
  phave() { podman image exists "$1"; }
  if ! phave localhost/shmdoctor-test/busybox:1; then
    root=$(mktemp -d); mkdir "$root/bin"; cp /bin/busybox "$root/bin/busybox"
    for applet in $("$root/bin/busybox" --list); do [ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"; done
    tar -C "$root" -c . | podman import -q -c 'CMD ["sh"]' - localhost/shmdoctor-test/busybox:1 >/dev/null
    rm -rf "$root"
  fi
  if ! phave localhost/shmdoctor-test/debian:bookworm; then
    tar -C "$CACHE/bookworm" -c . | podman import -q -c 'CMD ["/bin/bash"]' - localhost/shmdoctor-test/debian:bookworm >/dev/null
  fi
fi

if ! have shmdoctor-test/ray:1; then  # Ray 2.60 (CPU) over the python image: its object store's /dev/shm, for real
  ctx=$(mktemp -d); mkdir "$ctx/wheels"
  pip download -q --only-binary=:all: ray==2.60.0 -d "$ctx/wheels"
  docker build -q --network none --build-arg BASE=shmdoctor-test/python:1 \
    -t shmdoctor-test/ray:1 -f "$HERE/ray.Dockerfile" "$ctx"
  rm -rf "$ctx"
fi

if ! have shmdoctor-test/apps:2; then  # Debian's postgresql, chromium and chromedriver: other consumers of /dev/shm, for real
  docker build -q --network host --build-arg BASE=shmdoctor-test/debian:bookworm \
    -t shmdoctor-test/apps:2 -f "$HERE/apps.Dockerfile" "$HERE"
fi
