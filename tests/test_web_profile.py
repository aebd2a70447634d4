"""The web UI's security profile (``WEB-*``): its check, its opt-in, and what it catches.

The fast tests judge the check against a UI served over HTTP in miniature: a
scripted provider behind a door that keeps (or breaks) the server's rules,
no browser. The slow ones judge the reference's web page in headless
Chromium, which passes, and the gallery's broken servers and page
(``BROKEN_WEB_PROFILE`` in ``tests/gallery/web.py``), each caught on its
seed; ``nox -s detection`` measures them over 20.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest, ScriptedProvider
from dsh_user_interaction_conformance import (
    PROBE_ATTRIBUTE,
    Behaviour,
    Capabilities,
    Dismiss,
    HttpProbe,
    Report,
    RequirementResult,
    ScriptedDriver,
    SecretOffer,
    SetupError,
    Subject,
    build_matrix,
    read_report,
    run_suite,
    with_capabilities,
)
from dsh_user_interaction_conformance._web import PROFILE
from dsh_user_interaction_conformance._web._checks import foreign_origin

from .helpers import GALLERY_SEEDS, need

HTTP = Capabilities(serves_http=True)
OWN = "http://127.0.0.1:8123"
#: What a door lets in that it should refuse: the requirement each breaks.
Loose = Literal["", "secret", "origin", "body", "cookie", "markup"]
BROKEN: dict[Loose, str] = {
    "secret": "WEB-SECRET-1",
    "origin": "WEB-ORIGIN-1",
    "body": "WEB-BODY-1",
    "cookie": "WEB-COOKIE-1",
    "markup": "WEB-MARKUP-1",
}


class Door:
    """A UI served over HTTP, in miniature: a scripted provider behind a server's rules.

    *loose* names the rule it does not keep; with *settles_refused*, it
    answers a hostile request 403 and takes its outcome all the same; with
    *refuses_all*, it refuses even the page's own request.
    """

    def __init__(
        self,
        provider: ScriptedProvider,
        *,
        loose: Loose = "",
        settles_refused: bool = False,
        refuses_all: bool = False,
        capabilities: Capabilities = HTTP,
    ) -> None:
        self._scripted = ScriptedDriver(provider, capabilities)
        self.provider = provider
        self.capabilities = capabilities
        self.loose = loose
        self.settles_refused = settles_refused
        self.refuses_all = refuses_all
        self.sent: list[tuple[SecretOffer, str, str]] = []

    @property
    def origin(self) -> str:
        """The page's own origin."""
        return OWN

    async def perform(self, request: AskUserQuestionRequest, behaviour: Behaviour) -> None:
        """The human's actions, as the scripted driver does them."""
        await self._scripted.perform(request, behaviour)

    async def is_shown(self, request: AskUserQuestionRequest) -> bool:
        """Whether the request is pending."""
        return await self._scripted.is_shown(request)

    def _status(self, secret: SecretOffer, origin: str, content_type: str) -> int:
        if self.refuses_all:
            return 404
        if secret in {"none", "wrong"} and self.loose != "secret":
            return 403
        if secret == "cookie" and self.loose != "cookie":
            return 403
        if origin != OWN and self.loose != "origin":
            return 403
        media = content_type.split(";", maxsplit=1)[0].strip()
        if media != "application/json" and self.loose != "body":
            return 415
        return 200

    async def send(
        self,
        request: AskUserQuestionRequest,
        outcome: AskUserQuestionAnswer | Dismiss,
        *,
        secret: SecretOffer,
        origin: str,
        content_type: str,
    ) -> int:
        """Settle the ask with *outcome* if the rules let the request in; the status."""
        self.sent.append((secret, origin, content_type))
        status = self._status(secret, origin, content_type)
        if status != 200 and not (self.settles_refused and not self.refuses_all):
            return status
        pending = next((p for p in self.provider.pending if p.request is request), None)
        if pending is None or pending.done:
            return 409  # no longer pending: as a server says of an ask that ended
        if isinstance(outcome, Dismiss):
            pending.dismiss()
        else:
            pending.answer(outcome)
        return status

    async def markup_from_model(self, request: AskUserQuestionRequest) -> bool:
        """Whether the request's text holds markup the page would show as elements."""
        return self.loose == "markup" and PROBE_ATTRIBUTE in json.dumps(request["questions"])


def door(**rules: Any) -> Callable[[], Subject]:
    """A subject factory: a fresh scripted provider behind a door with *rules*."""

    @with_capabilities(HTTP)
    def factory() -> Subject:
        provider = ScriptedProvider()
        return Subject(provider=provider, driver=Door(provider, **rules), name="door")

    return factory


def judged(factory: Callable[[], object], *, stop_on: tuple[str, ...] = ()) -> Report:
    """The web profile's check alone, on *factory*'s subjects; over once *stop_on* fails."""
    return run_suite(
        subject_factory=factory,  # type: ignore[arg-type] # a Subject factory, as run_suite takes
        kinds=["provider"],
        only=["web-profile"],
        seed=1,
        shrink=False,
        stop_on=stop_on,
    )


def _result(report: Report, requirement: str) -> RequirementResult:
    return next(r for r in report.results if r.requirement.id == requirement)


def _statuses(report: Report) -> dict[str, str]:
    return {r.requirement.id: r.status for r in report.results}


def test_a_door_that_keeps_every_rule_passes_the_profile() -> None:
    """Every WEB requirement passes, judged by examples, and no SHOULD is reported broken."""
    report = judged(door())
    assert report.ok
    assert {rid: _statuses(report)[rid] for rid in PROFILE} == dict.fromkeys(PROFILE, "passed")
    assert all(r.examples > 0 for r in report.results)
    assert report.as_dict()["shoulds_broken"] == []
    assert report.capabilities.serves_http
    assert report.as_dict()["capabilities"]["serves_http"] is True


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 9), ids=lambda s: f"seed{s}")
def test_the_quick_profile_judges_every_refusal_on_any_seed(seed: int) -> None:
    """Four examples judge all four refusals: none is left untested, a MUST least of all.

    When an example sent one to three hostile requests of drawn kinds, the
    web page at the quick profile, seed 1, left ``WEB-BODY-1`` untested.
    """
    report = run_suite(
        subject_factory=door(),
        kinds=["provider"],
        only=["web-profile"],
        profile="quick",
        seed=seed,
        shrink=False,
    )
    assert {rid: _statuses(report)[rid] for rid in PROFILE} == dict.fromkeys(PROFILE, "passed")


@pytest.mark.parametrize("loose", sorted(BROKEN))
def test_a_door_that_lets_one_request_in_is_warned_of_never_failed(loose: Loose) -> None:
    """The rule it breaks is a warning, listed in shoulds_broken, and the run still passes."""
    requirement = BROKEN[loose]
    report = judged(door(loose=loose), stop_on=(requirement,))
    statuses = _statuses(report)
    assert statuses[requirement] == "warning", statuses
    assert report.as_dict()["shoulds_broken"] == [requirement]
    assert not _result(report, requirement).fails_run  # a SHOULD never fails a run


# The suite's own power (its verdict or its report on a broken or sound subject): slow tier.
@pytest.mark.slow
def test_a_refusal_that_settles_the_ask_anyway_is_caught_by_the_outcome() -> None:
    """A 4xx is not enough: the ask must still be the human's to answer."""
    report = judged(door(settles_refused=True))
    assert report.ok  # the warnings of a SHOULD never fail a run
    broken = report.as_dict()["shoulds_broken"]
    assert broken
    assert set(broken) <= set(PROFILE) - {"WEB-MARKUP-1"}
    messages = [r.message for r in report.results if r.status == "warning"]
    assert all("the ask ended with what a refused request sent" in m for m in messages), messages


def test_a_door_whose_every_request_is_refused_is_a_setup_error() -> None:
    """A probe that cannot send the page's own request could show no refusal: the run stops."""
    with pytest.raises(SetupError, match="the page's own request"):
        judged(door(refuses_all=True))


def test_a_driver_that_declares_http_without_the_probe_is_a_setup_error() -> None:
    """serves_http promises an HttpProbe; a driver without one is named, not judged."""

    @with_capabilities(HTTP)
    def factory() -> Subject:
        provider = ScriptedProvider()
        return Subject(provider=provider, driver=ScriptedDriver(provider, HTTP), name="bare")

    assert not isinstance(ScriptedDriver(ScriptedProvider()), HttpProbe)
    with pytest.raises(SetupError, match="is no HttpProbe"):
        judged(factory)


def test_the_profile_is_skipped_for_a_ui_that_does_not_serve_http() -> None:
    """Without serves_http the check does not run: the door is never sent a request."""
    doors: list[Door] = []

    def factory() -> Subject:
        provider = ScriptedProvider()
        made = Door(provider, capabilities=Capabilities())
        doors.append(made)
        return Subject(provider=provider, driver=made, name="door")

    report = run_suite(
        subject_factory=factory,
        capabilities=Capabilities(),
        kinds=["provider"],
        only=["web-profile"],
        seed=1,
    )
    assert {o.status for o in report.outcomes} == {"skipped"}
    assert all(not made.sent for made in doors)
    assert report.as_dict()["shoulds_broken"] == []


def test_the_probe_is_sent_every_kind_of_hostile_request() -> None:
    """Over a run: each way of offering the secret, foreign origins, and the preflight-free types."""
    doors: list[Door] = []

    @with_capabilities(HTTP)
    def factory() -> Subject:
        provider = ScriptedProvider()
        made = Door(provider)
        doors.append(made)
        return Subject(provider=provider, driver=made, name="door")

    judged(factory)
    sent = [request for made in doors for request in made.sent]
    assert {secret for secret, _, _ in sent} == {"page", "none", "wrong", "cookie"}
    assert len({origin for _, origin, _ in sent if origin != OWN}) >= 3
    media = {content_type.split(";", maxsplit=1)[0] for _, _, content_type in sent}
    assert (
        len(media & {"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"}) >= 2
    )


def test_the_report_and_the_matrix_list_the_shoulds_a_ui_breaks(tmp_path: Path) -> None:
    """A porter sees each broken SHOULD of the profile in the JSON report and the matrix."""
    report = judged(door(loose="cookie"), stop_on=("WEB-COOKIE-1",))
    path = tmp_path / "door.json"
    path.write_text(json.dumps(report.as_dict()), encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8"))["shoulds_broken"] == ["WEB-COOKIE-1"]
    matrix = build_matrix([read_report(path, "door")]).markdown()
    row = next(line for line in matrix.splitlines() if "SHOULDs broken" in line)
    assert "WEB-COOKIE-1" in row


@given(
    how=st.sampled_from(
        ["another site", "null", "another port", "another scheme", "a longer host", "userinfo"]
    ),
    own=st.sampled_from(
        ["http://127.0.0.1:8123", "https://agent.example", "http://[::1]:65535", "http://h:1"]
    ),
)
def test_a_foreign_origin_is_never_the_pages_own(how: Any, own: str) -> None:
    """Every way of making a foreign origin gives another origin than the page's."""
    foreign = foreign_origin(how, own)
    assert foreign != own
    assert foreign.lower() != own.lower()


# ---------------------------------------------------------------------------
# The reference's web page, in headless Chromium (slow)
# ---------------------------------------------------------------------------


def _chromium_or_skip() -> None:
    from dsh_user_interaction.extra.web.testing import chromium_executable

    need("chromium-headless-shell", chromium_executable() or "/usr/bin/chromium-headless-shell")


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3], ids=lambda s: f"seed{s}")
def test_the_web_page_passes_the_profile(seed: int) -> None:
    """The reference's page and server refuse every hostile request and show text as text."""
    _chromium_or_skip()
    from dsh_user_interaction.extra.web.testing import web_subject

    report = run_suite(
        subject_factory=web_subject, kinds=["provider"], only=["web-profile"], seed=seed
    )
    statuses = _statuses(report)
    assert report.ok
    assert {rid: statuses[rid] for rid in PROFILE} == dict.fromkeys(PROFILE, "passed"), [
        (r.requirement.id, r.message) for r in report.results if r.status != "passed"
    ]
    assert all(r.examples > 0 for r in report.results)
    assert report.as_dict()["shoulds_broken"] == []


def _broken_web_profile() -> dict[str, tuple[Callable[[], Awaitable[Subject]], str, str]]:
    from .gallery.web import BROKEN_WEB_PROFILE

    return BROKEN_WEB_PROFILE


_NAMES = (
    "no-secret-check",
    "no-origin-check",
    "form-bodies",
    "cookie-secret",
    "model-text-as-html",
)


def test_the_gallery_has_one_broken_web_ui_per_requirement() -> None:
    """Every WEB requirement has a broken server or page that breaks it, named here."""
    pytest.importorskip("playwright")
    gallery = _broken_web_profile()
    assert sorted(gallery) == sorted(_NAMES)
    assert sorted(requirement for _, requirement, _ in gallery.values()) == sorted(PROFILE)


@pytest.mark.slow
@pytest.mark.parametrize("seed", GALLERY_SEEDS, ids=[f"seed{s}" for s in GALLERY_SEEDS])
@pytest.mark.parametrize("name", _NAMES)
def test_a_broken_web_ui_is_caught_and_reported(name: str, seed: int, tmp_path: Path) -> None:
    """Each broken server or page is warned of on the seed, in shoulds_broken and the matrix.

    On this seed alone: ``nox -s detection -- 20 --web`` measures every one
    caught on all 20 seeds.
    """
    _chromium_or_skip()
    factory, requirement, check = _broken_web_profile()[name]
    report = run_suite(
        subject_factory=factory,
        kinds=["provider"],
        only=[check],
        seed=seed,
        shrink=False,
        stop_on=[requirement],
    )
    assert _statuses(report)[requirement] == "warning", _statuses(report)
    assert requirement in report.as_dict()["shoulds_broken"]
    assert not _result(report, requirement).fails_run  # a SHOULD never fails a run
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(report.as_dict()), encoding="utf-8")
    row = next(
        line
        for line in build_matrix([read_report(path, name)]).markdown().splitlines()
        if "SHOULDs broken" in line
    )
    assert requirement in row
