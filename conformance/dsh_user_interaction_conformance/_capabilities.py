"""What a UI under test can do, as its driver declares it."""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["Capabilities"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """The actions a UI supports. The suite generates only these.

    The capabilities are part of a conformance claim: the report lists them, so
    "passes" always means "passes, for a UI that can do this".

    >>> Capabilities(can_skip=False).as_dict()["can_skip"]
    False
    """

    #: The human can skip a single question ("Skip this question").
    can_skip: bool = True
    #: The human can dismiss the whole batch (closing the dialog).
    can_dismiss: bool = True
    #: The human can type custom text on a single-select question with options.
    custom_on_single: bool = True
    #: The human can pick labels *and* type text on a multi-select question.
    custom_on_multi: bool = True
    #: The UI can hold several pending asks at once.
    concurrent: bool = True
    #: The driver can say which questions are on screen (for the clean-up checks).
    observes_screen: bool = True
    #: A call into the implementation can be cancelled, as a Python task is, or
    #: by what a harness child maps that to (``HAR-CANCEL-2``). Only an
    #: implementation in a language without a way to cancel a call says
    #: ``False``; ``PRV-CANCEL-1`` and ``SVC-CANCEL-1`` are then skipped, as not
    #: applicable.
    cancellable: bool = True

    def as_dict(self) -> dict[str, bool]:
        """The capabilities as a JSON-ready mapping, for reports."""
        return asdict(self)
