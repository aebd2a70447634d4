"""Test configuration: one Hypothesis profile on top of Hypothesis's own default or ci profile."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Hostile text makes large examples on purpose; that is not a health problem here.
_parent = settings.get_profile("ci" if os.environ.get("CI") else "default")
settings.register_profile(
    "dsh",
    parent=_parent,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("dsh")
