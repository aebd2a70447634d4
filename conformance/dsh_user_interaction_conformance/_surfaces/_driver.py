"""What a driver of a UI with several surfaces does, and what a surface says of an ended ask."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, Protocol, TypeAlias, runtime_checkable

from dsh_user_interaction import AskUserQuestionRequest

from .._behaviour import Behaviour
from .._subject import Driver

__all__ = ["ENDINGS", "Ending", "SurfaceDriver", "Told", "surface_driver"]

#: How an ask ended, as a surface that showed it says.
Ending: TypeAlias = Literal["answered", "dismissed", "withdrawn", "timed_out"]
#: Every :data:`Ending`, in the order the spec lists them (``SURF-TELL-1``).
ENDINGS: Final[tuple[Ending, ...]] = ("answered", "dismissed", "withdrawn", "timed_out")


@dataclass(frozen=True, slots=True)
class Told:
    """What one surface says of an ask that ended, as its human reads it.

    >>> Told("answered", here=False)
    Told(how='answered', here=False)
    """

    #: How the ask ended. One of ``ENDINGS``, or the surface's own words
    #: when it says something else (which the suite reports as they are).
    how: str
    #: Whether the surface says the action that ended the ask was taken here
    #: (``True``), on another surface (``False``), or says neither (``None``,
    #: as for an ask the agent withdrew).
    here: bool | None = None


@runtime_checkable
class SurfaceDriver(Driver, Protocol):
    """A driver that acts on any of several surfaces of one UI (spec, "Several surfaces").

    The surfaces are numbered from 0 to ``capabilities.surfaces - 1``; the
    :class:`~dsh_user_interaction_conformance.Driver` methods act on surface
    0. Every method may wait, and the suite bounds every wait. Calls on
    different surfaces may run at the same time: two surfaces act on one ask
    at the same moment, or one closes while another acts.
    """

    async def perform_on(
        self, surface: int, request: AskUserQuestionRequest, behaviour: Behaviour
    ) -> None:
        """Wait until *surface* shows *request*, then do *behaviour* there.

        When the surface stops offering the request while the driver acts
        (another surface's action or the agent ended it), return without
        raising: :meth:`told_on` reads what the surface then says. Raise only
        when the surface fails the human (it never shows the request, say).
        """
        ...

    async def is_shown_on(self, surface: int, request: AskUserQuestionRequest) -> bool:
        """Whether *surface* still offers *request* to its human, once its UI has settled."""
        ...

    async def told_on(self, surface: int, request: AskUserQuestionRequest) -> Told | None:
        """What *surface* says of how *request* ended, or ``None`` if it says nothing.

        Called once the ask has ended. A driver may wait a little for the
        surface's news to arrive; ``None`` means the surface never said how.
        """
        ...

    async def reload(self, surface: int) -> None:
        """Reload or reconnect *surface*, and return once it is back.

        A web page is reloaded; a device reconnects; a fan-out's UI starts
        over from what its provider says is pending.
        """
        ...

    async def close(self, surface: int) -> None:
        """Close *surface*, as its human closing the tab or window would."""
        ...

    async def reopen(self, surface: int) -> None:
        """Open *surface* again after :meth:`close`, and return once it is ready."""
        ...


def surface_driver(driver: Driver) -> SurfaceDriver | None:
    """*driver* as a :class:`SurfaceDriver`, or ``None`` when it lacks a method of one."""
    return driver if isinstance(driver, SurfaceDriver) else None
