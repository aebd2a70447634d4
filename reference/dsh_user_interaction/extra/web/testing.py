"""The web provider's conformance driver and subject factories.

Needs Playwright and the conformance suite (``pip install
'dsh-user-interaction[web-testing]'``) and a Chromium: Debian's
``chromium-headless-shell`` or ``chromium``, or the executable
``DSH_CHROMIUM`` names (Playwright's own download is not used). Run the
suite on the web provider, through its page in headless Chromium, with::

    python -m dsh_user_interaction_conformance \\
        --provider dsh_user_interaction.extra.web.testing:web_subject
"""

import importlib as _importlib

try:
    _importlib.import_module("hypothesis")
    _importlib.import_module("playwright")
except ImportError as _missing:  # tested in a subprocess, with each hidden
    _msg = (
        f"dsh_user_interaction.extra.web.testing needs {_missing.name}: "
        "pip install 'dsh-user-interaction[web-testing]'"
    )
    raise ImportError(_msg, name=_missing.name) from _missing

from ._chromium import Chromium as Chromium
from ._chromium import HostConnection as HostConnection
from ._chromium import chromium_executable as chromium_executable
from ._chromium import shared_chromium as shared_chromium
from ._driver import CAPABILITIES as CAPABILITIES
from ._driver import PHONE_WIDTH as PHONE_WIDTH
from ._driver import WebDriver as WebDriver
from ._driver import make_subject as make_subject
from ._driver import web_phone_subject as web_phone_subject
from ._driver import web_subject as web_subject

__all__ = [
    "CAPABILITIES",
    "PHONE_WIDTH",
    "Chromium",
    "HostConnection",
    "WebDriver",
    "chromium_executable",
    "make_subject",
    "shared_chromium",
    "web_phone_subject",
    "web_subject",
]
