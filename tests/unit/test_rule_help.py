"""Every rule of the catalogue is described, and nothing else: SARIF's driver and the documentation read HELP."""

from shmdoctor.rule_help import HELP
from shmdoctor.rules import catalogue


def test_every_rule_has_its_help_and_no_help_is_for_a_rule_that_is_gone():
    assert set(HELP) == {r.id for r in catalogue()}
    assert all(h.description.endswith(".") and h.fix.endswith(".") for h in HELP.values())
