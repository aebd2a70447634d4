"""Broken variants of the terminal provider, each a mistake a real terminal UI makes.

Each is driven by the same black-box driver as the real provider; ``BROKEN_TERMINALS``
maps a name to its factory, the requirement the suite must name, and the check
that finds it.
"""

from __future__ import annotations

from collections.abc import Callable

from prompt_toolkit.filters import Condition
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest, ErrorCode
from dsh_user_interaction.extra.terminal import TerminalProvider
from dsh_user_interaction.extra.terminal._form import Form
from dsh_user_interaction.extra.terminal._provider import _Batch
from dsh_user_interaction.extra.terminal.testing import CAPABILITIES, make_subject
from dsh_user_interaction_conformance import Subject, with_capabilities


class _ClickOrderForm(Form):
    """Lists multi-select labels in the order they were ticked, not in option order."""

    def __init__(self, request: AskUserQuestionRequest) -> None:
        super().__init__(request)
        self.clicks: dict[int, list[str]] = {}

    def toggle(self) -> None:
        state = self.state
        label = state.labels[state.cursor] if state.labels else None
        super().toggle()
        clicks = self.clicks.setdefault(self.current, [])
        if label is not None:
            if label in clicks:
                clicks.remove(label)
            else:
                clicks.append(label)

    def answer(self) -> AskUserQuestionAnswer:
        answer = super().answer()
        for index, item in enumerate(answer["answers"]):
            if self.questions[index].multi and index in self.clicks:
                item["selected"] = [x for x in self.clicks[index] if x in item["selected"]]
        return answer


class ClickOrder(TerminalProvider):
    """Multi-select labels come back in click order."""

    _form_type = _ClickOrderForm


class PasteNewlines(TerminalProvider):
    """Pasted text has CR and CRLF turned into LF, as prompt_toolkit's own paste binding does."""

    def _insert(self, form: Form, text: str) -> None:
        super()._insert(form, text.replace("\r\n", "\n").replace("\r", "\n"))


class StaysOnAbort(TerminalProvider):
    """An aborted batch raises ASK_ABORTED but is left drawn on the screen."""

    def _forget(self, batch: _Batch) -> None:
        future = batch.future
        aborted = (
            future.done()
            and not future.cancelled()
            and getattr(future.exception(), "code", None) == ErrorCode.ASK_ABORTED
        )
        if aborted and not self._disposed:
            return
        super()._forget(batch)


class EscAborts(TerminalProvider):
    """Esc and Ctrl-C raise ASK_ABORTED, as the original's terminal UI does, not ASK_CANCELLED."""

    _dismissal = ErrorCode.ASK_ABORTED


class CtrlCAborts(TerminalProvider):
    """Esc dismisses, but Ctrl-C raises ASK_ABORTED, as if it stopped the program."""

    def _key_bindings(self, editing: Condition) -> KeyBindings:
        bindings = super()._key_bindings(editing)

        @bindings.add("c-c")  # added last, so it wins over the provider's own
        def _interrupt(event: KeyPressEvent) -> None:
            batch = self._shown
            if batch is not None:
                self._settle(batch, ErrorCode.ASK_ABORTED)

        return bindings


def _factory(provider_type: type[TerminalProvider]) -> Callable[[], Subject]:
    @with_capabilities(CAPABILITIES)
    def factory() -> Subject:
        return make_subject(provider_type, name=provider_type.__name__)

    return factory


#: name -> (subject factory, requirement it breaks, the check that finds it)
BROKEN_TERMINALS: dict[str, tuple[Callable[[], Subject], str, str]] = {
    "paste-newlines": (_factory(PasteNewlines), "PRV-TEXT-1", "provider-answers"),
    "stays-on-abort": (_factory(StaysOnAbort), "PRV-ABORT-2", "provider-lifecycle"),
    "esc-aborts": (_factory(EscAborts), "PRV-DISMISS-1", "provider-lifecycle"),
    "ctrl-c-aborts": (_factory(CtrlCAborts), "PRV-DISMISS-1", "provider-lifecycle"),
}
#: A SHOULD violation: reported as a warning, and the run still passes.
SHOULD_TERMINALS: dict[str, tuple[Callable[[], Subject], str, str]] = {
    "click-order": (_factory(ClickOrder), "ANS-MULTI-2", "provider-answers"),
}
