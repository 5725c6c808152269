"""The bad inputs only an engine can refuse (the rest: tests/integration/process/test_bad_inputs.py)."""

from __future__ import annotations

import pytest

from tests.helpers import assert_one_line_error, run_cli, unique_name

USAGE = 2
NOBODY = unique_name("no-such-container")


@pytest.mark.parametrize(
    "argv, message",
    [
        pytest.param(["audit", NOBODY], f"no such container: {NOBODY}", id="audit a container that does not exist"),
        pytest.param(
            ["audit", "bad/name!"], "no such container: bad/name!", id="audit a container name no engine allows"
        ),
    ],
)
def test_bad_input_the_engine_refuses(engine, argv, message):
    assert_one_line_error(run_cli(*argv), USAGE, message)
