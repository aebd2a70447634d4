"""The durable path as a provider subject: an agent's store, a relay, a UI behind it.

The provider under test is a :class:`~dsh_user_interaction.durable.DurableProvider`
on a store; a relay (:func:`~dsh_user_interaction.durable.serve`), on a
connection of its own, shows the store's asks through a
:class:`~dsh_user_interaction.ScriptedProvider` that the driver answers. So
the suite judges the whole path of a durable ask, store included, with
every capability: whatever the UI behind a relay does reaches the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable

from dsh_user_interaction import AskUserQuestionRequest, ScriptedProvider
from dsh_user_interaction.durable import AskStore, DurableProvider, SQLiteStore, serve

from .._behaviour import Behaviour
from .._subject import ScriptedDriver, Subject

__all__ = ["DurableDriver", "durable_subject", "make_durable_subject"]

#: How long the driver waits for an ask to reach the UI; the suite bounds it anyway.
_PATIENCE = 30.0


class DurableDriver:
    """Finds the UI's copy of a request by its ask id, then answers it as the scripted UI."""

    def __init__(self, agent: DurableProvider, ui: ScriptedProvider) -> None:
        self.agent = agent
        self.ui = ui
        self._scripted = ScriptedDriver(ui)
        self.capabilities = self._scripted.capabilities

    async def _relayed(self, request: AskUserQuestionRequest) -> AskUserQuestionRequest:
        async with asyncio.timeout(_PATIENCE):
            while (ask_id := self.agent.ask_id_of(request)) is None:  # noqa: ASYNC110
                await asyncio.sleep(0.002)  # the provider has no event to wait on
            pending = await self.ui.wait_for(lambda p: p.request.get("askId") == ask_id)
        return pending.request

    async def perform(self, request: AskUserQuestionRequest, behaviour: Behaviour) -> None:
        """Wait until the relay shows *request*, then act on the UI's copy of it."""
        await self._scripted.perform(await self._relayed(request), behaviour)

    async def is_shown(self, request: AskUserQuestionRequest) -> bool:
        """Whether the UI behind the relay shows an ask made for *request*."""
        ask_id = self.agent.ask_id_of(request)
        return ask_id is not None and any(p.request.get("askId") == ask_id for p in self.ui.pending)


def make_durable_subject(
    open_store: Callable[[], Awaitable[AskStore]],
    *,
    name: str = "durable",
    cleanup: Callable[[], Awaitable[object]] | None = None,
) -> Callable[[], Awaitable[Subject]]:
    """A subject factory for the durable path on the stores *open_store* opens.

    The agent and the relay each open a store of their own on the same data,
    as two processes would.
    """

    async def factory() -> Subject:
        agent_store = await open_store()
        relay_store = await open_store()
        ui = ScriptedProvider()
        agent = DurableProvider(agent_store)
        relay = asyncio.get_running_loop().create_task(
            serve(relay_store, ui, via="scripted", principal="driver"), name="dsh-durable-relay"
        )

        async def aclose() -> None:
            relay.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await relay
            await agent_store.close()
            await relay_store.close()
            if cleanup is not None:
                await cleanup()

        return Subject(provider=agent, driver=DurableDriver(agent, ui), name=name, aclose=aclose)

    return factory


async def durable_subject() -> Subject:
    """The durable path on a new SQLite file: ``--provider ...:durable_subject``."""
    folder = tempfile.mkdtemp(prefix="dsh-durable-")
    path = os.path.join(folder, "asks.db")

    async def open_store() -> AskStore:
        # Opening creates or reads the file (an fsync, a lock), a blocking call that a
        # busy disk can stretch past the stall limit: in a thread, as the loop's
        # requirements ask of everything an example runs (PRV-LOOP-1).
        return await asyncio.to_thread(SQLiteStore, path, poll_interval=0.005)

    async def cleanup() -> None:
        shutil.rmtree(folder, ignore_errors=True)

    return await make_durable_subject(open_store, name="durable (SQLite)", cleanup=cleanup)()
