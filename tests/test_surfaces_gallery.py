"""The surfaces check can fail: every broken fan-out is caught, and the sound ones pass.

The broken fan-outs are in ``tests/gallery/fan_out.py`` (``BROKEN_FAN_OUTS``),
each driven as three surfaces. ``nox -s detection`` measures them with the
rest of the gallery; here each is judged on the gallery's seeds, and on every
seed from 1 to 20 at once, which prints how many seeds caught each.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dsh_user_interaction_conformance import Subject, fan_out_subject, run_suite

from .gallery.fan_out import BROKEN_FAN_OUTS, SOUND_FAN_OUT
from .helpers import GALLERY_SEEDS

#: The bound the gallery runs with, as ``tests/test_gallery.py``'s.
BOUND = 0.2
#: The seeds of the detection run.
DETECTION_SEEDS = range(1, 21)


def _caught(factory: Callable[[], Subject], requirement: str, seed: int) -> bool:
    """Whether the surfaces check, on *seed*, fails *factory* with one of *requirement*."""
    wanted = set(requirement.split("|"))
    report = run_suite(
        subject_factory=factory,
        kinds=["provider"],
        only=["surfaces"],
        profile="default",
        seed=seed,
        bound=BOUND,
        shrink=False,
        stop_on=wanted,
    )
    failed = {r.requirement.id for r in report.results if r.status == "failed"}
    return not report.ok and bool(failed & wanted)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    "factory", [fan_out_subject, SOUND_FAN_OUT], ids=["fan-out", "sound-flawed-fan-out"]
)
def test_the_sound_fan_outs_pass_the_surfaces_check(
    factory: Callable[[], Subject], seed: int
) -> None:
    """The reference fan-out (two surfaces) and the gallery's fan-out without flaws (three) pass."""
    report = run_suite(subject_factory=factory, kinds=["provider"], only=["surfaces"], seed=seed)
    assert report.ok, [r.message for r in report.results if r.status != "passed"]
    surf = {r.requirement.id: r for r in report.results if r.requirement.id.startswith("SURF-")}
    assert {r.status for r in surf.values()} == {"passed"}
    assert all(r.examples > 0 for r in surf.values())


@pytest.mark.slow
@pytest.mark.parametrize("seed", GALLERY_SEEDS, ids=[f"seed{s}" for s in GALLERY_SEEDS])
@pytest.mark.parametrize("name", sorted(BROKEN_FAN_OUTS))
def test_broken_fan_out_is_caught(name: str, seed: int) -> None:
    """The surfaces check fails the fan-out and names what it breaks (the suite bounds each wait)."""
    factory, requirement = BROKEN_FAN_OUTS[name]
    assert _caught(factory, requirement, seed)


@pytest.mark.slow
def test_every_broken_fan_out_is_caught_on_every_seed_of_20() -> None:
    """Each broken fan-out is caught on each of the seeds 1 to 20; the counts are printed."""
    missed: dict[str, list[int]] = {}
    for name, (factory, requirement) in sorted(BROKEN_FAN_OUTS.items()):
        seeds = [seed for seed in DETECTION_SEEDS if not _caught(factory, requirement, seed)]
        print(f"{name}: caught on {len(DETECTION_SEEDS) - len(seeds)} of {len(DETECTION_SEEDS)}")
        if seeds:
            missed[name] = seeds
    assert not missed
