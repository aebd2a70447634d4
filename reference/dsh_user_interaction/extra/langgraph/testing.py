"""The LangGraph interrupt provider as a conformance-suite subject.

Needs the conformance suite too: ``pip install
'dsh-user-interaction[langgraph,conformance]'``. Run the suite's provider
checks on it, each ask a real graph run paused on its interrupt and resumed
by the driver, with::

    python -m dsh_user_interaction_conformance \\
        --provider dsh_user_interaction.extra.langgraph.testing:langgraph_subject
"""

import importlib as _importlib

try:
    _importlib.import_module("hypothesis")
except ImportError as _missing:
    _msg = (
        "dsh_user_interaction.extra.langgraph.testing needs the conformance suite: "
        "pip install 'dsh-user-interaction[langgraph,conformance]'"
    )
    raise ImportError(_msg, name="hypothesis") from _missing

from ._subject import CAPABILITIES as CAPABILITIES
from ._subject import GraphAsks as GraphAsks
from ._subject import GraphHuman as GraphHuman
from ._subject import PausedAsk as PausedAsk
from ._subject import human_answer as human_answer
from ._subject import langgraph_subject as langgraph_subject
from ._subject import make_langgraph_subject as make_langgraph_subject

__all__ = [
    "CAPABILITIES",
    "GraphAsks",
    "GraphHuman",
    "PausedAsk",
    "human_answer",
    "langgraph_subject",
    "make_langgraph_subject",
]
