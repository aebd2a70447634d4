"""The web UI security profile: what a UI served to a browser over HTTP refuses (``WEB-*``)."""

from ._probe import CONTROL as CONTROL
from ._probe import PROBE_ATTRIBUTE as PROBE_ATTRIBUTE
from ._probe import PROFILE as PROFILE
from ._probe import HttpProbe as HttpProbe
from ._probe import SecretOffer as SecretOffer

__all__ = ["CONTROL", "PROBE_ATTRIBUTE", "PROFILE", "HttpProbe", "SecretOffer"]
