# Debian's python3 with torch (the CPU wheel from the host's wheel folder) and shmdoctor's runtime deps.
# The source under test is bind-mounted at /src by the tests, so this image needs no rebuild per change.
ARG BASE
FROM ${BASE}
COPY wheels/ /wheels/
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --find-links /wheels \
      torch==2.13.0 click psutil pyyaml \
 && rm -rf /wheels
ENV PATH=/opt/venv/bin:$PATH PYTHONPATH=/src PYTHONDONTWRITEBYTECODE=1
