"""The spec's requirements, read from the spec itself, and the checks that cite them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Literal

__all__ = ["Requirement", "requirements", "spec_text"]

Level = Literal["MUST", "MUST NOT", "SHOULD"]

_LINE = re.compile(
    r"^- \*\*(?P<id>[A-Z]+(?:-[A-Z]+)*-\d+)\*\* \((?P<level>MUST NOT|MUST|SHOULD)\) (?P<text>.+)$",
    re.MULTILINE,
)


_LEVELS: dict[str, Level] = {"MUST": "MUST", "MUST NOT": "MUST NOT", "SHOULD": "SHOULD"}


@dataclass(frozen=True, slots=True)
class Requirement:
    """One normative statement of the spec."""

    id: str
    level: Level
    sentence: str

    @property
    def mandatory(self) -> bool:
        """Whether failing it fails the run (``MUST`` and ``MUST NOT``)."""
        return self.level != "SHOULD"


@cache
def spec_text() -> str:
    """The text of ``spec/user-interaction.md`` this suite was built with."""
    packaged = resources.files("dsh_user_interaction_conformance") / "spec" / "user-interaction.md"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    # An editable install runs from the source tree, where the spec sits beside us.
    source = Path(__file__).resolve().parents[2] / "spec" / "user-interaction.md"
    return source.read_text(encoding="utf-8")


@cache
def requirements() -> dict[str, Requirement]:
    """Every requirement of the spec, by ID, in spec order."""
    found: dict[str, Requirement] = {}
    for match in _LINE.finditer(spec_text()):
        level = _LEVELS[match["level"]]
        found[match["id"]] = Requirement(match["id"], level, match["text"].strip())
    return found
