"""What a UI under test can do, as its driver declares it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import cast

from ._behaviour import WAYS_FOR

__all__ = ["Capabilities"]

_NO_WAYS: Mapping[str, Sequence[str]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The actions a UI supports. The suite generates only these.

    The capabilities are part of a conformance claim: the report lists them, so
    "passes" always means "passes, for a UI that can do this".

    >>> Capabilities(can_skip=False).as_dict()["can_skip"]
    False

    A UI with more than one way to do an action declares them all, and the
    suite draws among them, so that each is exercised in every run:

    >>> Capabilities(ways={"dismiss": ["esc", "ctrl-c"]}).ways_of("dismiss")
    ('esc', 'ctrl-c')
    """

    #: The human can skip a single question ("Skip this question").
    can_skip: bool = True
    #: The human can dismiss the whole batch (closing the dialog).
    can_dismiss: bool = True
    #: The human can type custom text on a single-select question with options.
    custom_on_single: bool = True
    #: The human can pick labels *and* type text on a multi-select question.
    custom_on_multi: bool = True
    #: The human can change their mind on a question before it is submitted:
    #: pick another option, unpick one, type after picking, type over their
    #: text or clear it (:class:`~dsh_user_interaction_conformance.Revise`).
    revises: bool = True
    #: The UI's text fields hold a typed carriage return as it is. A web page's
    #: do not: HTML form controls hold every line break as a line feed, so a UI
    #: in a browser says ``False``, and the suite then types line feeds where it
    #: would type a carriage return (``PRV-TEXT-1`` still holds for what it types).
    keeps_carriage_returns: bool = True
    #: The UI can hold several pending asks at once.
    concurrent: bool = True
    #: The driver can say which questions are on screen (for the clean-up checks).
    observes_screen: bool = True
    #: The UI serves a browser over HTTP, and its driver can send requests as a
    #: hostile page would (it implements ``HttpProbe``).
    #: The suite then checks the web UI's security profile (``WEB-*``, each
    #: a ``SHOULD``). Off by default: the profile is no part of the seam.
    serves_http: bool = False
    #: A call into the implementation can be cancelled, as a Python task is, or
    #: by what a harness child maps that to (``HAR-CANCEL-2``). Only an
    #: implementation in a language without a way to cancel a call says
    #: ``False``; ``PRV-CANCEL-1`` and ``SVC-CANCEL-1`` are then skipped, as not
    #: applicable.
    cancellable: bool = True
    #: How many surfaces the UI shows each ask on (tabs, windows, devices, the
    #: UIs of a fan-out), each of which the driver can act on, reload, close
    #: and open again (:class:`~dsh_user_interaction_conformance.SurfaceDriver`).
    #: With two or more, the surface checks run (``SURF-*``); one, the
    #: default, is a UI with a single screen.
    surfaces: int = 1
    #: For each action the UI offers several ways of doing (``"dismiss"``,
    #: ``"skip"``, ``"pick"`` or ``"type"``), the names of those ways, the usual
    #: one first. Every behaviour the suite draws names one of them, as
    #: ``Dismiss(way="ctrl-c")``, and the driver performs the action that way.
    #: An action not named here has one way, and its ``way`` is ``None``.
    ways: Mapping[str, Sequence[str]] = field(default_factory=lambda: _NO_WAYS, hash=False)

    def __post_init__(self) -> None:
        """Check the declared surfaces and ways, and keep the ways read-only."""
        surfaces = cast("object", self.surfaces)
        if type(surfaces) is not int or surfaces < 1:
            msg = f"surfaces must be a whole number from 1, got {surfaces!r}"
            raise ValueError(msg)
        declared = cast("object", self.ways)  # checked as any value: it may come from JSON
        if not isinstance(declared, Mapping):
            msg = f"ways must be a mapping of action to names, got {type(declared).__name__}"
            raise TypeError(msg)
        kept: dict[str, tuple[str, ...]] = {}
        for action, names in cast("Mapping[object, object]", declared).items():
            if type(action) is not str or action not in WAYS_FOR:
                msg = f"ways: unknown action {action!r}; expected one of {', '.join(WAYS_FOR)}"
                raise ValueError(msg)
            if isinstance(names, str) or not isinstance(names, Sequence):
                msg = f"ways[{action!r}] must be a sequence of names, got {names!r}"
                raise TypeError(msg)
            found = tuple(cast("Sequence[object]", names))
            if not found or any(type(name) is not str or not name for name in found):
                msg = f"ways[{action!r}] must name one way or more, each a non-empty string"
                raise ValueError(msg)
            if len(set(found)) != len(found):
                msg = f"ways[{action!r}] names a way twice: {list(found)!r}"
                raise ValueError(msg)
            kept[action] = cast("tuple[str, ...]", found)
        object.__setattr__(self, "ways", MappingProxyType(kept))

    def ways_of(self, action: str) -> tuple[str, ...]:
        """The declared ways of doing *action*, the usual first; empty when it has one."""
        return tuple(self.ways.get(action, ()))

    def as_dict(self) -> dict[str, bool]:
        """The capability flags as a JSON-ready mapping, for reports (surfaces and ways apart)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in {"ways", "surfaces"}
        }

    def ways_as_dict(self) -> dict[str, list[str]]:
        """The declared ways as a JSON-ready mapping, for reports and the harness."""
        return {action: list(names) for action, names in self.ways.items()}
