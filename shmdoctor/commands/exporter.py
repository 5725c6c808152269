"""shmdoctor exporter: every container's /dev/shm as Prometheus metrics, served or written for node_exporter."""

from __future__ import annotations

import os
import select
import signal

import click

from ..config import config_options, resolver, show
from ..errors import ProbeError, UsageError
from ..exits import ExitCode
from ..exporter import serve as serving
from ..exporter.collect import Collector
from ..exporter.inventory import EngineInventory, ProcInventory, engine_socket_missing
from ..numbers import FloatRange, IntRange
from ..options import loader_options, selection_option
from ..suppress import rule_options

TEXTFILE = "shmdoctor.prom"


@click.command()
@click.option("--listen", metavar="ADDR:PORT", help="Serve /metrics there: 127.0.0.1:9787, :9787 (every address).")
@click.option(
    "--textfile",
    type=click.Path(),
    metavar="DIR",
    help=f"Write the metrics once to DIR/{TEXTFILE}, atomically, for node_exporter's textfile collector (cron).",
)
@click.option(
    "--source",
    type=click.Choice(["auto", "engine", "proc"]),
    default="auto",
    show_default=True,
    help="Containers from the Docker engine (DOCKER_HOST; Podman's socket too), or from /proc alone (containerd, "
    "CRI-O); auto: the engine when DOCKER_HOST is set or /var/run/docker.sock exists.",
)
@click.option(
    "--timeout",
    type=FloatRange(0.1, 300),
    default=5.0,
    show_default=True,
    help="Seconds a scrape may wait for the engine.",
)
@click.option(
    "--interval",
    type=FloatRange(0.5, 3600),
    default=5.0,
    show_default=True,
    help="Seconds between readings of every target; a scrape gets the latest.",
)
@click.option(
    "--refresh",
    type=FloatRange(1, 3600),
    default=15.0,
    show_default=True,
    help="--source proc: seconds between scans of /proc.",
)
@click.option(
    "--max-targets",
    type=IntRange(1, 100000),
    default=1000,
    show_default=True,
    help="Targets exported at most (bounds the series).",
)
@loader_options
@selection_option
@rule_options
@config_options
def command(
    listen,
    textfile,
    source,
    timeout,
    interval,
    refresh,
    max_targets,
    names,
    config,
    show_config,
    ignore,
    select,
    **loader,
) -> int:
    """/dev/shm size and use, memory limit, loader need, findings and leaked segments of the host and every
    running container, as Prometheus metrics. Read-only: nothing runs inside a container; use is read from the host
    through /proc/<pid>/root/dev/shm (root, in the host's PID namespace). A container's shmdoctor.loader label
    overrides the loader options for it; they apply to the containers that look like they use /dev/shm (all when
    none does), or to those --workload names. The working directory's config (the closest .shmdoctor.toml, or
    pyproject.toml's [tool.shmdoctor], above it) gives the options the command line does not.

    \b
    shmdoctor exporter --listen :9787
    shmdoctor exporter --listen 127.0.0.1:9787 --batch-size 100 --num-workers 4 --sample-bytes 1MiB
    shmdoctor exporter --source proc --listen :9787          # containerd / CRI-O nodes: no engine
    shmdoctor exporter --textfile /var/lib/node_exporter/textfile_collector
    """
    settings = resolver(config)
    if show_config:
        click.echo(show(settings, [None]))
        return 0
    if bool(listen) == bool(textfile):
        raise UsageError("give --listen ADDR:PORT to serve /metrics, or --textfile DIR to write them once")
    address = serving.parse(listen) if listen else None
    if textfile and not os.path.isdir(textfile):
        raise UsageError(f"--textfile {textfile!r} is not a directory")
    judging = settings.judging()  # a bad command line or config is refused before anything starts
    engine = source == "engine" or source == "auto" and not engine_socket_missing()
    inventory = (EngineInventory(timeout) if engine else ProcInventory(refresh)).start()
    collector = Collector(
        inventory,
        workload=judging.workload,
        fail_on="error",
        timeout=timeout,
        max_targets=max_targets,
        engine=engine,
        names=names,
        rules=judging.rules,
    )
    from ..render import metrics  # prometheus_client: only this command imports it

    where = f"the Docker engine at {inventory.host}" if isinstance(inventory, EngineInventory) else "/proc"
    if textfile:
        scrape = collector.scrape()
        path = os.path.join(textfile, TEXTFILE)
        try:
            metrics.write_textfile(path, scrape)
        except OSError as e:
            raise UsageError(f"cannot write {path}: {e.strerror}") from None
        click.echo(f"wrote {path}: {len(scrape.targets)} target(s) from {where}", err=True)
        if scrape.errors:
            raise ProbeError("; ".join(scrape.errors) + f" (written to {path} as shmdoctor_scrape_errors_total)")
        return 0

    latest = serving.Latest()
    reader = serving.Reader(lambda: metrics.render(collector.scrape()), latest, interval)
    assert address is not None  # --listen: the one of the two given, read above
    server = serving.serve(*address, latest, wait=timeout + 1)
    reader.start()
    click.echo(
        f"serving http://{listen}/metrics: the host and the containers of {where}, read every {interval:g} s; "
        "Ctrl-C to stop",
        err=True,
    )
    return _until_stopped(server, reader, inventory)


class _Terminated(Exception):
    pass


def _terminate(signum, frame) -> None:
    raise _Terminated


def _until_stopped(server, reader, inventory) -> int:
    """Wait for SIGTERM or Ctrl-C. The kernel may hand either to any of our threads, and Python runs its handler in
    the main thread only once that thread wakes (a sleep of an hour took docker stop's SIGTERM that long): the
    main thread waits on the signal wakeup fd, which the thread that took the signal writes to."""
    previous = signal.signal(signal.SIGTERM, _terminate)
    wake, woken = os.pipe()
    os.set_blocking(woken, False)
    previous_fd = signal.set_wakeup_fd(woken)
    try:
        while True:
            select.select([wake], [], [])
            os.read(wake, 512)  # the handler runs here, in this thread
    except _Terminated:
        click.echo("shmdoctor: terminated", err=True)
        return ExitCode.TERMINATED
    finally:  # Ctrl-C passes on to the CLI's handler (exit 130) after this
        signal.set_wakeup_fd(previous_fd)
        os.close(wake)
        os.close(woken)
        signal.signal(signal.SIGTERM, previous)
        server.shutdown()
        reader.stop()
        inventory.stop()
