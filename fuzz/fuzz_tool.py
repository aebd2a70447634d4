"""A long fuzz run of the ``ask_user_question`` tool; not part of CI.

``nox -s fuzz -- 1000000`` feeds that many arbitrary JSON values and strings
to the tool and fails on the first input that makes it raise or return text
that is not valid UTF-8.
"""

from __future__ import annotations

import asyncio
import json
import sys

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from dsh_user_interaction import ScriptedProvider, UserInteractionService
from dsh_user_interaction.tool import ToolResult, ask_user_question

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=10), inner, max_size=6)
    ),
    max_leaves=60,
)
_shaped = st.fixed_dictionaries(
    {
        "questions": st.lists(
            st.dictionaries(
                st.sampled_from(["id", "question", "header", "options", "multi_select"]), _json
            ),
            max_size=4,
        )
    }
)


def _skip_all(request: object) -> object:
    questions = request["questions"]  # type: ignore[index]
    return {"answers": [{"id": q["id"], "selected": []} for q in questions]}


def main(count: int) -> None:
    """Run *count* examples; raise on the first failure."""
    service = UserInteractionService(strict=False)
    service.register_provider(ScriptedProvider(respond=_skip_all))  # type: ignore[arg-type]

    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(_json | _shaped | st.text() | _json.map(json.dumps))
    def fuzz(arguments: object) -> None:
        result = asyncio.run(ask_user_question(service, arguments))
        assert isinstance(result, ToolResult)
        result.text.encode("utf-8")

    fuzz()
    sys.stdout.write(f"{count} inputs: every one gave a ToolResult with UTF-8 text\n")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
