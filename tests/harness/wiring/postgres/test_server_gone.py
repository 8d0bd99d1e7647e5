"""The PostgreSQL server goes away mid-session: the turn fails clearly, nothing acknowledged is
lost, and the next turn works once it is back. The server is reached through a TCP proxy the
test cuts and restores (the suite's server is shared, so it is never stopped)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import psycopg
import pytest
from anyio.abc import SocketStream

from harness.testing import FakeTokenizer, ScriptedModel, call_tool, config, run_turn, say
from harness.wiring import SessionOptions, open_session
from memory import MemoryLayerError
from tests.conftest import on_postgres


class Proxy:
    """Forwards 127.0.0.1:<port> to the server while `up`; `cut()` drops every connection."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port, self.up = host, port, True
        self.local_port = 0
        self._scopes: list[anyio.CancelScope] = []

    async def _pipe(self, src: SocketStream, dst: SocketStream) -> None:
        try:
            async for chunk in src:
                await dst.send(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        finally:
            await dst.aclose()

    async def _serve(self, client: SocketStream) -> None:
        async with client:
            if not self.up:
                return
            with anyio.CancelScope() as scope:
                self._scopes.append(scope)
                async with (
                    await anyio.connect_tcp(self.host, self.port) as server,
                    anyio.create_task_group() as tg,
                ):
                    tg.start_soon(self._pipe, client, server)
                    tg.start_soon(self._pipe, server, client)

    def cut(self) -> None:
        self.up = False
        for scope in self._scopes:
            scope.cancel()
        self._scopes.clear()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Proxy]:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.local_port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, self._serve, tg)
            yield self
            tg.cancel_scope.cancel()


async def test_a_turn_fails_clearly_while_the_server_is_gone_and_the_next_one_works(
    tmp_path: Path, postgres_url: str, sessions_schema: str
) -> None:
    info = psycopg.conninfo.conninfo_to_dict(postgres_url)
    proxy = Proxy(str(info.get("host", "127.0.0.1")), int(str(info.get("port", 5432))))
    async with proxy.running():
        url = f"postgresql://{info.get('user', 'postgres')}@127.0.0.1:{proxy.local_port}/{info.get('dbname', 'test')}"
        cfg = config(
            **on_postgres(url, sessions_schema),
            scope__user="ada",
            storage__lease_wait_s="5",
            sessions__connect_timeout_s="2",
        )
        model = ScriptedModel(
            [
                call_tool("memory", {"action": "add", "target": "user", "content": "Ada keeps bees"}),
                say("noted"),
                say("back again"),
            ]
        )
        async with open_session(
            cfg, SessionOptions(model=model, home=tmp_path, tokenizer=FakeTokenizer())
        ) as s:
            await run_turn(s, "I keep bees.")
            session_id = s.session_id
            proxy.cut()
            with pytest.raises(MemoryLayerError, match="PostgreSQL"):
                await run_turn(s, "are you there?")
            proxy.up = True
            await run_turn(s, "are you there now?")
            assert [m.content for m in s.transcript][-2:] == ["are you there now?", "back again"]
    with psycopg.connect(postgres_url, options=f"-c search_path={sessions_schema}") as conn:
        doc = conn.execute("SELECT text FROM curated_docs WHERE target = 'user'").fetchone()
        contents = [
            str(r[0])
            for r in conn.execute(
                "SELECT content FROM messages WHERE session_id = %s ORDER BY seq", (session_id,)
            )
        ]
    assert doc == ("Ada keeps bees",)  # the acknowledged write survived
    assert contents[0] == "I keep bees." and contents[-2:] == ["are you there now?", "back again"]
