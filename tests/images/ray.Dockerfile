# The python test image with Ray (CPU), from wheels the host downloaded: Ray's object store lives in /dev/shm.
ARG BASE
FROM ${BASE}
COPY wheels/ /wheels/
RUN /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-index --find-links /wheels ray==2.60.0 \
 && rm -rf /wheels
