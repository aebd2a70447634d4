"""The surfaces suite: one ask shown on several tabs, windows, devices or UIs (``SURF-*``)."""

from ._driver import ENDINGS as ENDINGS
from ._driver import Ending as Ending
from ._driver import SurfaceDriver as SurfaceDriver
from ._driver import Told as Told
from ._driver import surface_driver as surface_driver
from ._fan_out import FanOutDriver as FanOutDriver
from ._fan_out import ScriptedSurface as ScriptedSurface
from ._fan_out import fan_out_subject as fan_out_subject
from ._fan_out import make_fan_out_subject as make_fan_out_subject

__all__ = [
    "ENDINGS",
    "Ending",
    "FanOutDriver",
    "ScriptedSurface",
    "SurfaceDriver",
    "Told",
    "fan_out_subject",
    "make_fan_out_subject",
    "surface_driver",
]
