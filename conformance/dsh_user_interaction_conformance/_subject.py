"""The subject under test, the driver Protocol that simulates its human, and the reference pair."""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Protocol, TypeVar, cast, runtime_checkable

from dsh_user_interaction import (
    AskUserQuestionAnswerItem,
    AskUserQuestionRequest,
    CallerGate,
    ProviderRegistration,
    ScriptedProvider,
    UserInteractionProvider,
    UserInteractionSeam,
    UserInteractionService,
)

from ._behaviour import Behaviour, Dismiss, Nothing, Revise, Skip, TypeText, revised
from ._capabilities import Capabilities

__all__ = [
    "Driver",
    "Remote",
    "ScriptedDriver",
    "Service",
    "ServiceFactory",
    "ServiceRegistration",
    "Subject",
    "SubjectFactory",
    "reference_service",
    "reference_subject",
    "with_capabilities",
]


class Driver(Protocol):
    """Acts as the human in front of one UI. You write one for your provider.

    Every method may wait; the suite bounds every wait, so a driver that never
    returns fails a check instead of hanging the run. Calls can overlap: the
    concurrency check performs on several pending requests from one task, one
    after another, and other checks call :meth:`is_shown` while a
    :meth:`perform` of another request has finished.

    A driver may also carry a ``capabilities`` attribute; when it does, it
    must equal what the factory declares (see :func:`with_capabilities`).
    """

    async def perform(self, request: AskUserQuestionRequest, behaviour: Behaviour) -> None:
        """Wait until *request* is on screen, then do *behaviour*.

        *behaviour* is a tuple with one action per question (``Pick``,
        ``TypeText``, ``Skip``), or ``Dismiss()`` for the whole batch, or
        ``Nothing()``, which only waits until the request is shown.
        """
        ...

    async def is_shown(self, request: AskUserQuestionRequest) -> bool:
        """Whether any question of *request* is on screen now.

        Drivers without ``observes_screen`` may return ``False``.
        """
        ...


@runtime_checkable
class Remote(Protocol):
    """A provider or service that runs in another process, as the harness's proxies do.

    The engine reads both after each example that built it: :meth:`findings`
    are judged with the example, and a failure's report ends with the
    :meth:`transcript`. A Python subject has neither. A remote may also have
    ``show(value) -> str``, which writes a drawn value as the other process
    received it; a failure's example then shows each value so (the harness
    writes the JSON that crossed the pipe).
    """

    def findings(self) -> list[tuple[str, str]]:
        """(requirement, message) pairs found outside any check.

        A blocked loop in the child, say, or what it left after ``close``.
        """
        ...

    def transcript(self) -> list[str]:
        """The messages of the example, both directions, oldest first."""
        ...


@dataclass
class Subject:
    """A provider under test, with the driver that plays its human."""

    provider: UserInteractionProvider
    driver: Driver
    #: A name for reports.
    name: str = field(default="subject")
    #: Awaited after every example that built this subject, even one that
    #: failed or timed out, in the example's loop: close windows, pipes and
    #: subprocesses here. ``None`` means nothing to close.
    aclose: Callable[[], Awaitable[object]] | None = None


#: What a service's ``register_provider`` returns; the reference's protocol.
ServiceRegistration = ProviderRegistration
#: The structural type of a service under test; the reference's protocol.
Service = UserInteractionSeam


#: Builds a fresh subject, synchronously or as a coroutine. The suite calls it
#: once per generated example, inside that example's running event loop.
SubjectFactory = Callable[[], Subject | Awaitable[Subject]]
#: Builds a fresh service (anything with ``register_provider`` and ``ask``),
#: synchronously or as a coroutine, inside the example's running loop. A
#: service with an ``aclose()`` coroutine method is closed after each example.
ServiceFactory = Callable[[], Service | Awaitable[Service]]

F = TypeVar("F", bound=Callable[[], Any])
S = TypeVar("S", bound=Callable[..., Any])


class _Declared(Generic[F]):
    """A factory that carries the capabilities of what it builds."""

    def __init__(self, factory: F, capabilities: Capabilities) -> None:
        self.factory = factory
        self.capabilities = capabilities
        self.__qualname__ = getattr(factory, "__qualname__", repr(factory))
        self.__module__ = getattr(factory, "__module__", __name__)
        self.__doc__ = factory.__doc__

    def __call__(self) -> Any:  # noqa: ANN401 - whatever the wrapped factory returns
        return self.factory()


def with_capabilities(capabilities: Capabilities) -> Callable[[F], F]:
    """Declare what the UI a subject factory builds can do, without building one.

    >>> from dsh_user_interaction_conformance import Capabilities, reference_subject
    >>> @with_capabilities(Capabilities(can_skip=False))
    ... def my_subject():
    ...     return reference_subject()
    >>> my_subject.capabilities.can_skip
    False
    """

    def declare(factory: F) -> F:
        return cast("F", _Declared(factory, capabilities))

    return declare


def declared_capabilities(factory: object) -> Capabilities | None:
    """The capabilities a factory declares, if it declares any."""
    found = getattr(factory, "capabilities", None)
    return found if isinstance(found, Capabilities) else None


#: The policies of spec section 8 a service may declare, and what declaring one means.
POLICIES: Final = {
    "gate": "the factory takes a keyword argument gate=, a caller gate (GATE-*)",
    "deadline": "the service honours deadline and default (REQ-DEADLINE-1, REQ-DEFAULT-*, POL-*)",
    "observers": "the service has observe(observer) (OBS-*)",
}


def with_policies(*policies: str) -> Callable[[S], S]:
    """Declare the policies of spec section 8 that the services a factory builds have.

    The suite checks a policy only on a service that declares it. A service
    that declares ``gate`` is built as ``factory(gate=...)`` by the gate's
    checks, with the suite's own gate.

    >>> from dsh_user_interaction import UserInteractionService
    >>> @with_policies("deadline", "observers")
    ... def my_service():
    ...     return UserInteractionService()
    >>> sorted(declared_policies(my_service))
    ['deadline', 'observers']
    """
    unknown = sorted(set(policies) - set(POLICIES))
    if unknown:
        msg = f"unknown policies {unknown}; expected some of {sorted(POLICIES)}"
        raise ValueError(msg)

    def declare(factory: S) -> S:
        setattr(factory, _POLICIES_ATTRIBUTE, frozenset(policies))
        return factory

    return declare


def declared_policies(factory: object) -> frozenset[str]:
    """The policies a service factory declares (:func:`with_policies`); none by default."""
    found: object = getattr(factory, _POLICIES_ATTRIBUTE, None)
    if not isinstance(found, frozenset):
        return frozenset()
    return frozenset(str(name) for name in cast("frozenset[object]", found))


_POLICIES_ATTRIBUTE: Final = "__dsh_policies__"


class UsageError(Exception):
    """A command line names something it cannot use: it exits with status 2."""


def load_factory(spec: str, option: str) -> Callable[[], Any]:
    """The factory *spec* names as ``MODULE:ATTR``, given to the command line's *option*.

    The command line and the harness child both load their factories here, so
    they accept the same names and refuse the others with the same message.
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UsageError(f"{option} must look like MODULE:ATTR, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise UsageError(f"{option}: cannot import {module_name!r}: {error}") from None
    except Exception as error:  # noqa: BLE001 - a module that fails on import is a usage error
        raise UsageError(f"{option}: importing {module_name!r} raised {error!r}") from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise UsageError(f"{option}: {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise UsageError(f"{option}: {spec!r} is not callable")
    factory: Callable[[], Any] = target
    return factory


class ScriptedDriver:
    """The driver of :class:`~dsh_user_interaction.ScriptedProvider`: code plays the human."""

    def __init__(
        self, provider: ScriptedProvider, capabilities: Capabilities | None = None
    ) -> None:
        self.provider = provider
        self.capabilities = capabilities or Capabilities()

    async def perform(self, request: AskUserQuestionRequest, behaviour: Behaviour) -> None:
        """Find the pending ask for *request* and settle it as *behaviour* says."""
        pending = await self.provider.wait_for(lambda p: p.request is request)
        if isinstance(behaviour, Nothing):
            return
        if isinstance(behaviour, Dismiss):
            pending.dismiss()
            return
        items: list[AskUserQuestionAnswerItem] = []
        for question, action in zip(request["questions"], behaviour, strict=True):
            offered = [option["label"] for option in question.get("options", ())]
            if isinstance(action, Revise):
                # The form's state after each step, as the spec reads it.
                items.append(revised(question, action.steps))
                continue
            if isinstance(action, Skip):
                items.append({"id": question["id"], "selected": []})
                continue
            # A UI lists picked labels as it shows them: in option order.
            picked = [label for label in offered if label in action.labels]
            item: AskUserQuestionAnswerItem = {"id": question["id"], "selected": picked}
            if isinstance(action, TypeText):
                item["custom"] = action.text
            items.append(item)
        pending.answer({"answers": items})

    async def is_shown(self, request: AskUserQuestionRequest) -> bool:
        """Whether *request* is still pending."""
        return any(p.request is request for p in self.provider.pending)


def reference_subject() -> Subject:
    """A fresh :class:`~dsh_user_interaction.ScriptedProvider` with its driver.

    Its driver can do everything :class:`Capabilities` names, the default.
    """
    provider = ScriptedProvider()
    return Subject(provider=provider, driver=ScriptedDriver(provider), name="reference")


@with_policies("gate", "deadline", "observers")
def reference_service(*, gate: CallerGate | None = None) -> UserInteractionService:
    """A fresh strict :class:`~dsh_user_interaction.UserInteractionService`, with every policy.

    The gate's checks pass *gate*, the suite's own (``GATE-*``).
    """
    return UserInteractionService(gate=gate)
