"""The command line: a thin Click group. main() is the one place that maps errors to exit codes."""

from __future__ import annotations

import importlib
import os
import sys
from functools import partial

import click

from .errors import ShmDoctorError, internal
from .exits import ExitCode

# Each is the module shmdoctor.commands.<name>, defining `command`, imported only when that command runs:
# `check` never pays for the Docker SDK, torch or YAML. In the order --help lists them.
COMMANDS = ("check", "audit", "lint", "bench", "watch", "clean", "explain", "run", "exporter")


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        command: click.Command = importlib.import_module(f"shmdoctor.commands.{name}").command
        # its page of the manual, said where help is printed (the URL is read from the package's metadata)
        command.format_epilog = partial(_manual, f"commands/{name}.md")  # type: ignore[method-assign]
        if not any(p.name == "color" for p in command.params):
            command.params.append(_color_option())  # `shmdoctor lint --color never` as well as before the command
        return command

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _manual("index.md", ctx, formatter, "README.md is the way in")


def _manual(page: str, ctx: click.Context, formatter: click.HelpFormatter, more: str = "") -> None:
    from .manual import page as url

    formatter.write_paragraph()
    formatter.write(f"Manual: {url(page)}" + (f" ({more})" if more else "") + "\n")  # never wrapped: a URL


COLORS = {"auto": None, "always": True, "never": False}  # Click's own: None colours a terminal only


def _set_color(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        ctx.color = COLORS[value]  # what click.echo asks; a command's context takes its group's


def _color_option() -> click.Option:
    return click.Option(
        ["--color"],
        type=click.Choice(list(COLORS)),
        expose_value=False,
        is_eager=True,
        callback=_set_color,
        help="Colour the text: auto (a terminal, unless NO_COLOR is set), always, never.",
    )


@click.group(
    cls=LazyGroup,
    invoke_without_command=True,  # bare `shmdoctor`: the help, exit 0
    params=[_color_option()],
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(None, "-V", "--version", package_name="shmdoctor")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Will this PyTorch DataLoader fit in this container's /dev/shm? Facts, verdict and the exact fix."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


MAX_ERROR = 1000  # characters: a message quoting a huge value stays one readable line


def _error(message: str) -> None:
    """One line on stderr; the message quotes names and values from input: escaped, as all text output is."""
    from .limits import clip
    from .render.escape import escape

    click.echo(f"shmdoctor: error: {clip(escape(message), MAX_ERROR)}", err=True)


def main(argv: list[str] | None = None) -> int:
    try:
        code = cli.main(args=argv, prog_name="shmdoctor", standalone_mode=False)
        return int(code) if isinstance(code, int) else ExitCode.OK
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.ClickException as e:  # bad flags and values: Click's message, on one line
        _error(" ".join(e.format_message().split()))
        return ExitCode.USAGE
    except (click.Abort, KeyboardInterrupt):
        click.echo("shmdoctor: interrupted", err=True)
        return ExitCode.INTERRUPTED
    except ShmDoctorError as e:
        _error(" ".join(str(e).split()))
        return e.exit_code
    except BrokenPipeError:  # `shmdoctor ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush cannot fail again
        return ExitCode.OK
    except Exception as e:  # a bug of ours: one line and its own code, never 1 (a finding, to a CI script)
        _error(internal(e))
        return ExitCode.INTERNAL


def entry() -> None:
    sys.exit(int(main()))
