"""`python -m shmdoctor` and the `shmdoctor` script. A signal that comes before the command is ready to handle it
(while Python imports Click and the command) ends the process quietly, 130 or 143 as a shell says, no traceback:
there is nothing to clean up yet. From then on Ctrl-C is a KeyboardInterrupt that cli.main answers, and a command
with something to clean up (bench, watch) installs its own handlers. `_signal` (the C module under `signal`) and
`os` are in place when Python starts: the handlers go in before anything is imported (typeshed has no stub for
`_signal`)."""

import _signal  # type: ignore[import-not-found]
import os


def _early(signum: int, frame: object) -> None:
    os.write(2, b"shmdoctor: interrupted\n" if signum == _signal.SIGINT else b"shmdoctor: terminated\n")
    os._exit(128 + signum)


def run() -> None:
    _signal.signal(_signal.SIGINT, _early)
    _signal.signal(_signal.SIGTERM, _early)
    from .cli import entry

    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    entry()


if __name__ == "__main__":
    run()
