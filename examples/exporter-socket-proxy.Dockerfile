# A read-only proxy of the Docker socket for shmdoctor exporter: Debian's haproxy with
# examples/exporter-socket-proxy.cfg (only the GETs the exporter makes reach the engine).
#   docker build -t shmdoctor-socket-proxy -f examples/exporter-socket-proxy.Dockerfile examples
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends haproxy >/dev/null \
 && rm -rf /var/lib/apt/lists/*
COPY exporter-socket-proxy.cfg /etc/haproxy/shmdoctor-exporter.cfg
ENV SHMDOCTOR_PROXY_SOCKET=/run/docker-read-only/docker.sock DOCKER_SOCKET=/var/run/docker.sock
# root: the engine's socket is root's (and the docker group's); haproxy keeps no file but its own socket
ENTRYPOINT ["haproxy", "-db", "-f", "/etc/haproxy/shmdoctor-exporter.cfg"]
