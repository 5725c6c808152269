# Debian's PostgreSQL, and Chromium with its ChromeDriver (Selenium's way in), over the Debian root filesystem: two
# consumers of /dev/shm other than PyTorch, run for real in a 64 MiB container (tests/integration/docker/
# test_explain_apps.py). Built with the host's network, the package index reached through the CA bundle the base
# carries.
ARG BASE
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql chromium chromium-driver \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
ENV PATH=/usr/lib/postgresql/15/bin:$PATH
