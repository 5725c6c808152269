"""Where the failing job ran, as evidence: the facts of this machine only where the text is known to come from here
(`run`, `explain --container`, `explain --here`); else what the user states (`--shm-size`, `--where`) or what the
text itself says (a df line, a `--shm-size` or `shm_size` in a pasted command, a pod's log prefix), or unknown.
The judge weighs an ambiguous text (a bus error, a kill) against the place only as far as the place is known.
Pure: the facts of a place elsewhere are made here from what was said, nothing is probed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..model import Facts, Form, Ipc, Memory, Runtime, Shm, ShmSource, Target
from ..sizes import format_size
from .clues import Clues

# here: this machine or the container named (its facts probed); stated: the user's --shm-size / --where; text: the
# log says it; unknown: nothing does
Known = Literal["here", "stated", "text", "unknown"]
KNOWN: tuple[Known, ...] = ("here", "stated", "text", "unknown")

# Each form a fix is said in, as the target and runtime that render/forms.form_of maps back to it, and where such a
# place's /dev/shm comes from
_FORMS: dict[Form, tuple[Literal["local", "container", "service", "workload"], Runtime, ShmSource]] = {
    "shell": ("local", "none", "system"),
    "docker": ("container", "docker", "docker-shm"),
    "podman": ("container", "podman", "podman-shm"),
    "compose": ("service", "docker", "docker-shm"),
    "swarm": ("service", "docker", "docker-shm"),
    "kubernetes": ("workload", "kubernetes", "runtime-shm"),
    "quadlet": ("service", "podman", "podman-shm"),
    "ecs": ("container", "ecs", "docker-shm"),
    "batch": ("container", "batch", "docker-shm"),
    "azureml": ("container", "azureml", "docker-shm"),
}
FORMS: tuple[Form, ...] = tuple(_FORMS)
WHERE = "where it ran"  # the name of a place elsewhere


@dataclass(frozen=True)
class Place:
    """The place a failure is judged in: its facts (of this machine, or made from what was said), how they are known,
    and, for a place elsewhere, its form and what said its size and form."""

    facts: Facts
    known: Known
    form: Form | None = None  # a place elsewhere: the form its fix is said in, where stated or read
    said: str = ""  # where the size and form come from, in words

    @property
    def here(self) -> bool:
        return self.known == "here"

    def as_dict(self) -> dict:
        return {
            "known": self.known,
            "shm_bytes": self.facts.shm.size_bytes,
            "memory_limit_bytes": self.facts.memory.limit_bytes,
            "form": self.form,
            "said": self.said,
        }


def here(facts: Facts) -> Place:
    return Place(facts, "here", said="the facts of this machine or of the container named")


def elsewhere(clues: Clues | None = None, shm_bytes: int | None = None, form: Form | None = None) -> Place:
    """A place the text comes from that is not this machine: what the user stated (--shm-size, --where) first, then
    what the text says; a place nothing tells is unknown (its /dev/shm of unknown size, its fix said for Docker)."""
    clues = clues or Clues()
    said = []
    if shm_bytes is not None:
        said.append(f"/dev/shm {format_size(shm_bytes)} from --shm-size")
    elif clues.shm_size is not None:
        shm_bytes = clues.shm_size
        said.append(f"/dev/shm {format_size(shm_bytes)} from the text ({clues.shm_size_from})")
    if form is not None:
        said.append(f"{form} from --where")
    elif clues.form is not None:
        form = clues.form
        said.append(f"{form} from the text ({clues.form_from})")
    memory = clues.memory_said
    if memory is not None:
        said.append(f"a memory limit of {format_size(memory)} from the text ({clues.memory_said_from})")
    known: Known = "stated" if any(s.endswith(("--shm-size", "--where")) for s in said) else "text"
    kind, runtime, source = _FORMS[form or "docker"]
    shm = Shm.unmeasured(shm_bytes, source if shm_bytes is not None else "unknown", WHERE)
    facts = Facts(Target(kind, WHERE), shm, Ipc("unknown"), Memory(memory, None), runtime=runtime)
    if not said:
        return Place(facts, "unknown", None, "the text does not say where it ran")
    return Place(facts, known, form, "; ".join(said))
