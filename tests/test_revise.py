"""A human who changes their mind (PRV-REVISE-1): pick then type, pick again, unpick, type over.

Before :class:`Revise`, the suite never picked an option and then typed, so a
UI that kept the pick beside the text on a single-select question passed;
the gallery's ``pick-beside-typed-text`` (and the MCP bridge's
``pick-beside-text``), ``keeps-first-pick`` and ``appends-typed-text`` are
now caught on 20 of 20 seeds (``tests/test_gallery.py`` runs them).

Skip joins the steps (issue 47): before, "pick an option, then Skip" was
never drawn, so a page that ignored Skip after a pick passed. A revision now
skips after its changes, or skips and takes the skip back; the gallery's
``keeps-picks-of-skipped`` and ``keeps-skip-taken-back`` (and the web page's
``skip-ignored-after-pick``) are caught on 20 of 20 seeds.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from dsh_user_interaction import AskUserQuestionItem, AskUserQuestionRequest, answer_violations
from dsh_user_interaction_conformance import (
    Capabilities,
    Revise,
    Step,
    expected_answer,
    held_after,
    revised,
)
from dsh_user_interaction_conformance._harness._subjects import _behaviour as to_wire
from dsh_user_interaction_conformance.child import _behaviour as from_wire
from dsh_user_interaction_conformance.strategies import actions, behaviours, requests

QUESTION: AskUserQuestionItem = {
    "id": "q",
    "question": "Which?",
    "options": [{"label": "a"}, {"label": "b"}, {"label": "c"}],
}
MULTI: AskUserQuestionItem = {**QUESTION, "multiSelect": True}


@pytest.mark.parametrize(
    ("question", "steps", "expected"),
    [
        # Single-select: a later pick replaces, and text overrides a pick.
        (QUESTION, [("pick", "a"), ("pick", "b")], {"id": "q", "selected": ["b"]}),
        (QUESTION, [("pick", "a"), ("type", "x")], {"id": "q", "selected": [], "custom": "x"}),
        (QUESTION, [("type", "x"), ("clear", ""), ("pick", "c")], {"id": "q", "selected": ["c"]}),
        (QUESTION, [("type", "x"), ("type", "y")], {"id": "q", "selected": [], "custom": "y"}),
        # Multi-select: picks in option order, unpicks gone, text beside them.
        (MULTI, [("pick", "c"), ("pick", "a"), ("unpick", "c")], {"id": "q", "selected": ["a"]}),
        (
            MULTI,
            [("pick", "b"), ("type", "x"), ("pick", "a")],
            {"id": "q", "selected": ["a", "b"], "custom": "x"},
        ),
        (MULTI, [("pick", "b"), ("type", "x"), ("clear", "")], {"id": "q", "selected": ["b"]}),
        # No options: only text, typed over.
        (
            {"id": "q", "question": "Why?"},
            [("type", "x"), ("clear", ""), ("type", "z")],
            {"id": "q", "selected": [], "custom": "z"},
        ),
        # Pick, then skip; type, then skip: a skipped question answers nothing.
        (QUESTION, [("pick", "a"), ("skip", "")], {"id": "q", "selected": []}),
        (QUESTION, [("pick", "a"), ("type", "x"), ("skip", "")], {"id": "q", "selected": []}),
        (MULTI, [("pick", "a"), ("pick", "b"), ("skip", "")], {"id": "q", "selected": []}),
        (
            {"id": "q", "question": "Why?"},
            [("type", "x"), ("skip", "")],
            {"id": "q", "selected": []},
        ),
        # Skip, then pick: the skip taken back first.
        (QUESTION, [("skip", ""), ("unskip", ""), ("pick", "b")], {"id": "q", "selected": ["b"]}),
        (
            MULTI,
            [("skip", ""), ("unskip", ""), ("type", "x")],
            {"id": "q", "selected": [], "custom": "x"},
        ),
        # A change of mind after a skip taken back: what was held, emptied, then picked.
        (
            MULTI,
            [("pick", "a"), ("skip", ""), ("unskip", ""), ("unpick", "a"), ("pick", "c")],
            {"id": "q", "selected": ["c"]},
        ),
        (
            QUESTION,
            [("pick", "a"), ("type", "x"), ("skip", ""), ("unskip", ""), ("clear", "")],
            {"id": "q", "selected": ["a"]},
        ),
    ],
)
def test_a_revision_answers_with_what_the_question_holds_at_the_end(
    question: AskUserQuestionItem, steps: list[Step], expected: dict[str, Any]
) -> None:
    """The oracle of PRV-REVISE-1, case by case."""
    assert revised(question, steps) == expected


def test_taking_a_skip_back_gives_the_draft_back_or_leaves_the_question_empty() -> None:
    """``restores`` says which: the web page gives the draft back, a UI may start afresh."""
    steps: list[Step] = [("pick", "a"), ("type", "x"), ("skip", ""), ("unskip", "")]
    assert held_after(steps, multi=True) == (["a"], "x")
    assert held_after(steps, multi=True, restores=False) == ([], "")
    assert held_after(steps[:3], multi=True) == held_after(steps[:3], multi=True, restores=False)


def _unambiguous(question: AskUserQuestionItem, steps: tuple[Step, ...]) -> bool:
    """On a single-select, the suite never picks while text is typed (the UI's design decides).

    Nor does it pick, type or clear while the question is skipped: only an
    unskip follows a skip.
    """
    skipped = False
    for kind, _ in steps:
        if skipped and kind != "unskip":
            return False
        skipped = kind == "skip"
    if question.get("multiSelect") is True or not question.get("options"):
        return True
    text = ""
    for kind, value in steps:
        if kind == "pick" and text:
            return False
        if kind in {"type", "clear"}:
            text = value
    return True


@given(st.data())
def test_every_drawn_revision_is_answerable_and_unambiguous(data: st.DataObject) -> None:
    """A drawn revision leaves an answer that keeps every answer rule, and UIs agree on it.

    Labels picked are offered ones, unpicks undo earlier picks, something is
    left to answer with, and text is never typed where the UI takes none.
    """
    request: AskUserQuestionRequest = data.draw(requests())
    claim = data.draw(
        st.builds(
            Capabilities,
            custom_on_single=st.booleans(),
            custom_on_multi=st.booleans(),
            can_skip=st.booleans(),
        )
    )
    drawn = data.draw(actions(request, claim))
    assert not answer_violations(request, expected_answer(request, drawn))
    for question, action in zip(request["questions"], drawn, strict=True):
        if not isinstance(action, Revise):
            continue
        multi = question.get("multiSelect") is True
        offered = [option["label"] for option in question.get("options", ())]
        assert _unambiguous(question, action.steps), action
        picked, text = held_after(action.steps, multi=multi)
        # Something is left to answer with, unless the question ends skipped.
        assert picked or text or action.steps[-1][0] == "skip"
        for kind, value in action.steps:
            if kind in {"pick", "unpick"}:
                assert value in offered
            if kind == "unpick":
                assert multi
            if kind in {"skip", "unskip"}:
                assert claim.can_skip
                assert value == ""
        if offered and not (claim.custom_on_multi if multi else claim.custom_on_single):
            assert all(kind not in {"type", "clear"} for kind, _ in action.steps)


class Form:
    """A simple model of one question on a form, independent of the oracle.

    Radio buttons or checkboxes, a text box and a "Skip this question"
    checkbox that locks the rest while it is checked, as the web page's card.
    Taking the skip back gives the draft back when *restores*, or empties the
    question (a UI that starts afresh).
    """

    def __init__(self, question: AskUserQuestionItem, *, restores: bool) -> None:
        self.question = question
        self.labels = [option["label"] for option in question.get("options", ())]
        self.multi = question.get("multiSelect") is True
        self.restores = restores
        self.checked = dict.fromkeys(self.labels, False)
        self.text = ""
        self.skip = False

    def do(self, kind: str, value: str) -> None:
        """One gesture; a control used while the question is skipped is locked."""
        if kind == "unskip":
            assert self.skip, "taking back a skip that was never made"
            self.skip = False
            if not self.restores:
                self.checked = dict.fromkeys(self.labels, False)
                self.text = ""
            return
        assert not self.skip, f"{kind} while the question is skipped: its controls are locked"
        if kind == "skip":
            self.skip = True
        elif kind == "pick":
            if not self.multi:
                self.checked = dict.fromkeys(self.labels, False)
            self.checked[value] = True
        elif kind == "unpick":
            self.checked[value] = False
        else:
            self.text = value

    def answer(self) -> dict[str, Any]:
        """What the form sends: nothing for a skip; text overrides a single choice."""
        if self.skip:
            return {"id": self.question["id"], "selected": []}
        selected = [label for label in self.labels if self.checked[label]]
        if self.text and not self.multi:
            selected = []
        item: dict[str, Any] = {"id": self.question["id"], "selected": selected}
        if self.text:
            item["custom"] = self.text
        return item


@given(st.data(), st.booleans())
def test_the_oracle_agrees_with_a_form_whether_or_not_an_unskip_gives_the_draft_back(
    data: st.DataObject, restores: bool
) -> None:
    """Every drawn revision, skips included, is a form's answer under either design of unskip.

    The form locks a skipped question, so this also pins that nothing but an
    unskip follows a skip.
    """
    request: AskUserQuestionRequest = data.draw(requests())
    for question, action in zip(request["questions"], data.draw(actions(request)), strict=True):
        if not isinstance(action, Revise):
            continue
        form = Form(question, restores=restores)
        for kind, value in action.steps:
            form.do(kind, value)
        assert revised(question, action.steps) == form.answer(), action


@given(st.data())
def test_every_drawn_revision_crosses_the_harness_pipe_unchanged(data: st.DataObject) -> None:
    """A behaviour sent to a child in another language, skips included, is read back as drawn.

    The suite's side writes each step as JSON (``spec/harness.md``), and the
    Python child reads it back: ``{"step": "skip"}`` and ``{"step": "unskip"}``
    as well as the older steps.
    """
    request: AskUserQuestionRequest = data.draw(requests())
    drawn = data.draw(behaviours(request))
    assert from_wire(json.loads(json.dumps(to_wire(drawn)))) == drawn


@given(st.data())
def test_a_ui_that_does_not_revise_is_never_asked_to(data: st.DataObject) -> None:
    """``revises=False`` (the terminal's claim) keeps Revise out of every drawn behaviour."""
    request: AskUserQuestionRequest = data.draw(requests())
    drawn = data.draw(actions(request, Capabilities(revises=False)))
    assert not any(isinstance(action, Revise) for action in drawn)


#: The seeds the revision shares are pooled over: one seed's examples are not
#: independent (Hypothesis mutates earlier examples and draws the constants of
#: local source files), so a share read from one seed moves by a factor of three
#: from seed to seed, and with any edit to a literal of the package.
_SHARE_SEEDS = (1, 2, 3, 20261202)


@pytest.mark.slow
def test_the_revisions_that_matter_are_drawn_often() -> None:
    """Pinned shares, over 4,000 drawn requests in four seeds: what the gallery's revision bugs need.

    Per example, a single-select question revised to a pick other than the
    first (which ``keeps-first-pick`` misses), one picked then typed over
    (which ``pick-beside-typed-text`` keeps), text typed over text, a
    question skipped while it held something (which ``keeps-picks-of-skipped``
    answers with) and a skip taken back (which ``keeps-skip-taken-back`` keeps).
    """
    counts: Counter[str] = Counter()

    @settings(
        max_examples=1000,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def sample(data: st.DataObject) -> None:
        request: AskUserQuestionRequest = data.draw(requests())
        counts["examples"] += 1
        seen: set[str] = set()
        for question, action in zip(request["questions"], data.draw(actions(request)), strict=True):
            if not isinstance(action, Revise):
                continue
            kinds = [kind for kind, _ in action.steps]
            single = bool(question.get("options")) and question.get("multiSelect") is not True
            picked, text = held_after(action.steps, multi=not single)
            first = next((value for kind, value in action.steps if kind == "pick"), None)
            if single and picked and not text and picked[-1] != first:
                seen.add("another pick stands")
            if single and "pick" in kinds and "type" in kinds[kinds.index("pick") :]:
                seen.add("pick, then type")
            if kinds.count("type") >= 2:
                seen.add("text typed over")
            if "unpick" in kinds:
                seen.add("unpick")
            if kinds[-1] == "skip" and any(held_after(action.steps[:-1], multi=not single)):
                seen.add("skipped holding something")
            if "unskip" in kinds:
                seen.add("skip taken back")
        counts.update(seen)

    for number in _SHARE_SEEDS:
        seed(number)(sample)()
    share = {name: counts[name] / counts["examples"] for name in counts if name != "examples"}
    assert share["another pick stands"] >= 0.05, share
    assert share["pick, then type"] >= 0.05, share
    assert share["text typed over"] >= 0.08, share
    assert share["unpick"] >= 0.01, share
    # Pick (or type), then skip; and a skip taken back: 0.097 and 0.089 when pinned.
    assert share["skipped holding something"] >= 0.05, share
    assert share["skip taken back"] >= 0.05, share
