"""A fan-out over scripted UIs as a subject of several surfaces: the reference for ``SURF-*``.

The provider under test is a :class:`~dsh_user_interaction.durable.FanOutProvider`
(``DUR-FAN-1``) over N :class:`ScriptedSurface` UIs; each UI is one surface,
and :class:`FanOutDriver` plays the human in front of each.

Design notes:

* A surface finds its copy of a request by the request's questions: the
  fan-out gives each UI a copy of the request with a signal of its own, and
  the same ``questions`` list. When one request is asked more than once,
  the newest copy is the one acted on.
* A surface's screen is what its UI shows: every pending ask, while it is
  open. Reloading and opening again rebuild it from the asks its provider
  still has pending, as a UI that forgets its screen does; closing empties
  it, and the provider keeps the asks (``SURF-CLOSE-1``).
* What a surface says of an ended ask (:meth:`FanOutDriver.told_on`) is
  what its UI learnt, in this order: its verdict (``DUR-ACK-1``), ``saved``
  or ``lost``; else, when it gave an outcome and heard no verdict, that its
  own outcome was taken (a UI without a verdict believes its answer won);
  else its request signal's reason: a
  :class:`~dsh_user_interaction.durable.Withdrawn` says how, a
  :class:`TimeoutError` that it timed out, anything else that the agent
  withdrew it.
* The durable words (:data:`~dsh_user_interaction.durable.EndedHow`) map to
  the suite's (:data:`ENDINGS`) as they read to the agent: ``defaulted``
  is ``answered`` (the agent got an answer, the defaults, that no surface
  gave), and ``expired`` is ``withdrawn`` (no surface and no deadline ended
  it). Neither occurs without a store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

from dsh_user_interaction import (
    AskUserQuestionAnswer,
    AskUserQuestionRequest,
    ErrorCode,
    PendingAsk,
    ScriptedProvider,
    UserInteractionError,
    UserInteractionProvider,
)
from dsh_user_interaction.durable import EndedHow, FanOutProvider, Verdict, Withdrawn

from .._behaviour import Behaviour, Dismiss, Nothing
from .._capabilities import Capabilities
from .._subject import ScriptedDriver, Subject, with_capabilities
from ._driver import Ending, Told

__all__ = ["FanOutDriver", "ScriptedSurface", "fan_out_subject", "make_fan_out_subject"]

#: The suite's word for each way a durable ask ends (see the module's notes).
_ENDING: Final[dict[EndedHow, Ending]] = {
    "answered": "answered",
    "dismissed": "dismissed",
    "withdrawn": "withdrawn",
    "timed_out": "timed_out",
    "defaulted": "answered",
    "expired": "withdrawn",
}
#: How many loop steps a surface waits for a verdict still on its way.
_VERDICT_STEPS: Final = 3


@dataclass(eq=False)
class _Shown:
    """One request a surface's UI was asked, and what became of it there."""

    request: AskUserQuestionRequest
    verdict: asyncio.Future[Verdict] | None = None
    #: How the UI's own human ended it (``answered``, ``dismissed``), if they did.
    gave: Ending | None = None
    #: Whether the UI's ``ask()`` of it has returned.
    ended: bool = False


class ScriptedSurface:
    """One UI of a fan-out: a scripted screen that hears verdicts, reloads, closes and reopens.

    It asks for verdicts (:class:`~dsh_user_interaction.durable.VerdictAware`),
    so its human is told "answered here" only when the fan-out took their
    answer. Its human is the :class:`FanOutDriver`.
    """

    def __init__(self) -> None:
        #: The provider whose pending asks the driver settles.
        self.scripted = ScriptedProvider()
        #: Whether the surface is open (its human has not closed it).
        self.open = True
        self._shown: list[_Shown] = []
        #: The requests the screen shows, by identity (a request's values may be any objects).
        self._screen: list[AskUserQuestionRequest] = []
        self._changed = asyncio.Event()

    def expect_verdict(
        self, request: AskUserQuestionRequest, verdict: asyncio.Future[Verdict]
    ) -> None:
        """Keep *verdict* for *request*, which the fan-out asks next."""
        self._of(request).verdict = verdict

    async def ask(self, request: AskUserQuestionRequest) -> AskUserQuestionAnswer:
        """Show *request* while it is pending; note how this surface's human ended it."""
        shown = self._of(request)
        if self.open:
            self._screen.append(request)
        self._change()
        try:
            answer = await self.scripted.ask(request)
        except UserInteractionError as error:
            if error.code is ErrorCode.ASK_CANCELLED:
                shown.gave = "dismissed"
            raise
        finally:
            shown.ended = True
            self._screen = [kept for kept in self._screen if kept is not request]
            self._change()
        shown.gave = "answered"
        return answer

    def rebuild(self) -> None:
        """Show again every ask the provider has pending, as after a reload, if open."""
        if self.open:
            self._screen = [p.request for p in self.scripted.pending if not p.done]
        self._change()

    def close(self) -> None:
        """Close the surface: its screen empties; its provider keeps every ask."""
        self.open = False
        self._screen = []
        self._change()

    def reopen(self) -> None:
        """Open the surface again, showing every ask still pending."""
        self.open = True
        self.rebuild()

    def newest(self, request: AskUserQuestionRequest) -> _Shown | None:
        """The newest copy of *request* this UI was asked, if any."""
        for shown in reversed(self._shown):
            if shown.request["questions"] is request["questions"]:
                return shown
        return None

    def on_screen(self, shown: _Shown) -> PendingAsk | None:
        """The pending ask of *shown*, when the screen offers it to the human."""
        if not self.open or shown.ended:
            return None
        if not any(kept is shown.request for kept in self._screen):
            return None
        for pending in self.scripted.pending:
            if pending.request is shown.request and not pending.done:
                return pending
        return None

    def next_change(self) -> asyncio.Event:
        """An event that the surface's next change sets: an ask shown or ended, a reload."""
        return self._changed

    def _of(self, request: AskUserQuestionRequest) -> _Shown:
        for shown in reversed(self._shown):
            if shown.request is request:
                return shown
        shown = _Shown(request)
        self._shown.append(shown)
        return shown

    def _change(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()


class FanOutDriver:
    """The humans in front of each UI of a fan-out: a ``SurfaceDriver``, surface N is UI N.

    The plain :class:`~dsh_user_interaction_conformance.Driver` methods act
    on surface 0.
    """

    def __init__(self, uis: Sequence[ScriptedSurface], capabilities: Capabilities) -> None:
        #: The UIs, one per surface.
        self.uis = tuple(uis)
        #: What the UIs can do (everything), on ``len(uis)`` surfaces.
        self.capabilities = capabilities

    async def perform(self, request: AskUserQuestionRequest, behaviour: Behaviour) -> None:
        """Do *behaviour* on surface 0."""
        await self.perform_on(0, request, behaviour)

    async def is_shown(self, request: AskUserQuestionRequest) -> bool:
        """Whether surface 0 offers *request*."""
        return await self.is_shown_on(0, request)

    async def perform_on(
        self, surface: int, request: AskUserQuestionRequest, behaviour: Behaviour
    ) -> None:
        """Wait until *surface* shows *request*, then do *behaviour*; quietly, if it ended first."""
        ui = self.uis[surface]
        while True:
            change = ui.next_change()
            shown = ui.newest(request)
            if shown is not None:
                if shown.ended:
                    return  # withdrawn from this UI first: told_on says how
                pending = ui.on_screen(shown)
                if pending is not None:
                    break
                if any(p.request is shown.request and p.done for p in ui.scripted.pending):
                    return  # settled (withdrawn) in this very step
            await change.wait()
        if isinstance(behaviour, Nothing):
            return
        try:
            if isinstance(behaviour, Dismiss):
                pending.dismiss()
            else:
                await ScriptedDriver(ui.scripted).perform(pending.request, behaviour)
        except asyncio.InvalidStateError:
            return  # the ask ended here in the same step: too late, as a human can be

    async def is_shown_on(self, surface: int, request: AskUserQuestionRequest) -> bool:
        """Whether *surface* offers *request* to its human now."""
        ui = self.uis[surface]
        shown = ui.newest(request)
        return shown is not None and ui.on_screen(shown) is not None

    async def told_on(self, surface: int, request: AskUserQuestionRequest) -> Told | None:
        """What *surface*'s UI learnt of how *request* ended (see the module's notes)."""
        shown = self.uis[surface].newest(request)
        if shown is None:
            return None
        verdict = shown.verdict
        for _ in range(_VERDICT_STEPS):
            if verdict is None or verdict.done():
                break
            await asyncio.sleep(0)
        if verdict is not None and verdict.done() and not verdict.cancelled():
            return _verdict_told(verdict.result())
        if shown.gave is not None:
            return Told(shown.gave, here=True)  # no verdict: its own outcome, it believes
        signal = shown.request.get("signal")
        if signal is None or not signal.aborted:
            return None
        reason = signal.reason
        if isinstance(reason, Withdrawn):
            return Told(_ENDING[reason.how], here=_elsewhere(reason.how))
        if isinstance(reason, TimeoutError):
            return Told("timed_out")
        return Told("withdrawn")

    async def reload(self, surface: int) -> None:
        """Rebuild *surface*'s screen from what its provider has pending."""
        self.uis[surface].rebuild()

    async def close(self, surface: int) -> None:
        """Close *surface*: it shows nothing until :meth:`reopen`."""
        self.uis[surface].close()

    async def reopen(self, surface: int) -> None:
        """Open *surface* again, showing every ask still pending."""
        self.uis[surface].reopen()


def _elsewhere(how: EndedHow) -> bool | None:
    """``False`` when a human on another surface ended the ask, else ``None`` (no one did)."""
    return False if how in ("answered", "dismissed") else None


def _verdict_told(verdict: Verdict) -> Told:
    """What a verdict tells a surface's human."""
    how = verdict.how
    if how is None:  # unsaved: only a relay gives it
        return Told("not saved", here=None)
    if verdict.saved:
        return Told(_ENDING[how], here=True)
    return Told(_ENDING[how], here=_elsewhere(how))


#: Builds the provider under test over the surfaces' UIs, in surface order.
FanOutFactory: TypeAlias = Callable[[list[ScriptedSurface]], UserInteractionProvider]


def make_fan_out_subject(
    surfaces: int = 2, *, fan_out: FanOutFactory = FanOutProvider, name: str = "fan-out"
) -> Subject:
    """A fresh subject: *fan_out* over *surfaces* scripted UIs, each a surface.

    *fan_out* builds the provider under test from the UIs, in surface order
    (by default :class:`~dsh_user_interaction.durable.FanOutProvider`). Its
    driver declares ``Capabilities(surfaces=surfaces)``, as a factory of it
    must (:func:`~dsh_user_interaction_conformance.with_capabilities`).

    >>> make_fan_out_subject(3).driver.capabilities.surfaces
    3
    """
    uis = [ScriptedSurface() for _ in range(surfaces)]
    driver = FanOutDriver(uis, Capabilities(surfaces=surfaces))
    return Subject(provider=fan_out(uis), driver=driver, name=name)


@with_capabilities(Capabilities(surfaces=2))
def fan_out_subject() -> Subject:
    """A fresh :class:`~dsh_user_interaction.durable.FanOutProvider` over two scripted UIs.

    Each UI is a surface, and the driver acts on either
    (``Capabilities(surfaces=2)``, every action).
    """
    return make_fan_out_subject()
