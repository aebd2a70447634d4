"""Sphinx configuration for the dsh-user-interaction documentation."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "_ext"))

import dsh_user_interaction  # noqa: E402 - after the path set-up

project = "dsh-user-interaction"
author = "The dsh-user-interaction authors"
copyright = "2026, The dsh-user-interaction authors"
release = dsh_user_interaction.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "sphinx_copybutton",
    "requirements_table",
    "conformance_matrix",
]
# The copy button leaves out the prompts, so a doctest or a shell line copies as code.
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

html_theme = "furo"
html_title = f"dsh-user-interaction {release}"

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}
nitpicky = True
# The build is offline, so the standard library and third-party packages are
# not cross-linked. Every public name of this project must resolve. The
# names below are documented under their public name; signatures spell them
# by their private module, or (F) they are the type variable of
# with_capabilities.
nitpick_ignore = [
    ("py:class", "dsh_user_interaction_conformance._subject.F"),
    ("py:class", "dsh_user_interaction_conformance._subject.S"),
    ("py:class", "AskObserver"),
    ("py:class", "Responder"),
    ("py:class", "StoreFactory"),
    ("py:class", "dsh_user_interaction._types.AgentT_co"),
    ("py:class", "dsh_user_interaction_conformance._baseline.BaselineEntry"),
    ("py:class", "dsh_user_interaction_conformance._baseline.FailureForm"),
    ("py:class", "dsh_user_interaction_conformance._store._subject.SQLiteStoreSubject"),
    ("py:class", "dsh_user_interaction._durable._agent.AgentT"),
    # What a fan-out subject's surface keeps of each request it was asked.
    ("py:class", "dsh_user_interaction_conformance._surfaces._fan_out._Shown"),
    # The type variable of run_tool: what the tool's body returns.
    ("py:class", "T"),
] + [
    ("py:class", f"dsh_user_interaction_conformance._engine.{name}")
    for name in ("Draws", "Setup", "Scenario", "FailureRecord", "StallRecord")
]
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(collections|collections\.abc|typing|typing_extensions|asyncio|types|enum|dataclasses)\..*",
    ),
    (r"py:.*", r"(hypothesis|pytest|_pytest)(\..*)?"),
    # The terminal extra's third-party types: prompt_toolkit and pyte.
    (r"py:.*", r"(prompt_toolkit|pyte)(\..*)?"),
    (r"py:class", r"(Input|Output|PipeInput|Vt100_Output|Size|TextIO)"),
    # The MCP extra's third-party types: the SDK, its wire types and pydantic.
    (r"py:.*", r"(mcp|mcp_types|pydantic|anyio)(\..*)?"),
    (r"py:class", r"_asyncio\..*"),
    (r"py:class", r"(ServerRequestContext|Context|ServerSession|ClientRequestContext)"),
    (r"py:class", r"(ElicitationFnT|ElicitRequestParams|ElicitResult|ErrorData|RequestId)"),
    (r"py:class", r"st\..*"),
    (r"py:class", r"(NoneType|Ellipsis|EllipsisType)"),
    # The durable extras' third-party and standard-library types.
    (r"py:.*", r"(psycopg|os|pathlib)\..*"),
]
