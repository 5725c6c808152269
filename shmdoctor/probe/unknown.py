"""A value a file leaves to whatever deploys it: Terraform's `var.x` and `${...}`, CloudFormation's `!Ref` and
`Fn::Sub`, a Nomad template's placeholders. Read as unknown, never as bad input, and said as written."""

from __future__ import annotations


class Unknown(str):
    """A value set when the file is evaluated (a variable, a reference, a function of them): its expression as
    written. A string, so that it can name a target and be said; never a size."""
