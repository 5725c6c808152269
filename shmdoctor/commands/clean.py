"""shmdoctor clean: list the leaked segments of /dev/shm and, with --yes, remove exactly those."""

from __future__ import annotations

import click

from ..model import SHM
from ..options import FORMATS
from ..render import render
from ..shm.removal import clean


@click.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option("--yes", is_flag=True, help="Remove the leaked segments (without it, nothing changes).")
@click.option(
    "--exclusive",
    is_flag=True,
    help="No other container shares this /dev/shm: PyTorch segments whose creator is dead here go too "
    "(refused under --ipc=host or a bind of the host's /dev/shm).",
)
@click.option(
    "--path",
    "directory",
    type=click.Path(),
    default=SHM,
    show_default=True,
    metavar="DIR",
    help="The tmpfs to clean: /dev/shm, or the mount point of another tmpfs.",
)
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True, help="Output format.")
def command(names, yes, exclusive, directory, fmt) -> int:
    """Leaked segments (torch_<pid>_<n>_<n>, nccl-XXXXXX, sem.mp-XXXXXXXX, sgl_shm_mq_<pid>_<8 hex>, names matched
    whole) that no live process holds, with their sizes; --yes removes them. Python shared_memory's psm_<8 hex>
    (vLLM), Ray's plasmaXXXXXX and Triton's triton_python_backend_shm_region_<uuid> are listed as kept, with why:
    they may outlive their holders by design and their names carry no creator.

    A segment held by a live process (descriptor or map, unlinked ones included), one whose creator is still
    alive (a batch in flight) and any file shmdoctor does not recognise are never touched. Outside the host's PID
    namespace (in a container) a PyTorch or SGLang segment's creator cannot be checked, since a peer sharing
    /dev/shm may have it in flight: those are kept, with the reason, unless --exclusive says no other container
    shares it. Each
    removal happens under a kernel write lease, granted only while no process has the file open or mapped, even
    one /proc does not show. NAME limits the work to those segments. Exit 1 when a leaked segment could not be
    removed.

    \b
    shmdoctor clean
    shmdoctor clean --yes
    shmdoctor clean --yes --exclusive        # in a container whose /dev/shm no other container shares
    shmdoctor clean --yes torch_8_3258520444_1 --format json
    """
    outcome = clean(directory, names, yes=yes, exclusive=exclusive)
    click.echo(render(outcome, fmt))
    if outcome.interrupted:
        click.echo("shmdoctor: interrupted", err=True)
    return outcome.exit_code
