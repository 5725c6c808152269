# shmdoctor, the core package only (no torch): `check` inside a training container's image or next to it,
# `audit` from the host through the Docker socket.
#   docker build -t shmdoctor .
#   docker run --rm --shm-size=64m shmdoctor check --batch-size 100 --num-workers 4 --sample-bytes 1MiB
#   docker run --rm -v /var/run/docker.sock:/var/run/docker.sock:ro \
#     --group-add "$(stat -c %g /var/run/docker.sock)" shmdoctor audit --batch-size 100 --num-workers 4 --sample-bytes 1MiB
ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}

# A venv works on every Python image, Debian's externally-managed python3 included.
COPY pyproject.toml README.md /tmp/shmdoctor/
COPY shmdoctor /tmp/shmdoctor/shmdoctor
RUN python3 -m venv /opt/shmdoctor \
 && /opt/shmdoctor/bin/pip install --no-cache-dir --disable-pip-version-check /tmp/shmdoctor \
 && rm -rf /tmp/shmdoctor \
 && (useradd --system --uid 10001 --no-create-home shmdoctor 2>/dev/null \
     || adduser -S -u 10001 -H shmdoctor 2>/dev/null || true)
ENV PATH=/opt/shmdoctor/bin:$PATH PYTHONDONTWRITEBYTECODE=1
USER 10001
ENTRYPOINT ["shmdoctor"]
CMD ["check"]
