"""The OpenAI-compatible doors, driven by the official `openai` client against a running server."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest
from openai.types.responses import ResponseCompletedEvent, ResponseTextDeltaEvent

from harness.testing.processes import KeelServer, keel_server
from tests.harness.serve.conftest import first_started, write_config


@pytest.fixture(scope="module")
def server(model_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeelServer]:
    root = tmp_path_factory.mktemp("serve-doors")
    with keel_server(write_config(root / "keel.yaml", model_url), home=root / "home") as s:
        yield s


@pytest.fixture
def client(server: KeelServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60) as c:
        yield c


def conversation(server: KeelServer, session: str) -> list[tuple[str, str]]:
    data = httpx.get(f"{server.url}/v1/sessions/{session}/messages").json()["data"]
    return [(m["role"], m["content"]) for m in data]


def test_chat_completions_keeps_the_history_in_the_session_named_by_the_header(
    client: openai.OpenAI, server: KeelServer
) -> None:
    raw = client.chat.completions.with_raw_response.create(
        model="keel", messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "one"}]
    )
    session = raw.headers["X-Keel-Session"]
    first = raw.parse()
    assert first.choices[0].message.content == "echo: one"
    assert first.usage is not None and first.usage.completion_tokens > 0
    second = client.chat.completions.with_raw_response.create(
        model="keel",
        messages=[
            {"role": "user", "content": "ignored: keel holds the history"},
            {"role": "user", "content": "two"},
        ],
        extra_headers={"X-Keel-Session": session},
    )
    assert second.headers["X-Keel-Session"] == session
    usage = second.parse().usage
    assert usage is not None and usage.prompt_tokens_details is not None
    assert (
        usage.prompt_tokens_details.cached_tokens is not None
        and usage.prompt_tokens_details.cached_tokens > 0
    )
    assert conversation(server, session) == [
        ("user", "one"),
        ("assistant", "echo: one"),
        ("user", "two"),
        ("assistant", "echo: two"),
    ]


def test_chat_completions_streams_text_and_usage(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="keel",
        messages=[{"role": "user", "content": "stream this"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "echo: stream this"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_responses_continue_by_previous_response_id_and_by_conversation(
    client: openai.OpenAI, server: KeelServer
) -> None:
    first = client.responses.create(model="keel", input="alpha")
    assert first.output_text == "echo: alpha"
    assert first.usage is not None and first.usage.output_tokens > 0
    second = client.responses.create(model="keel", input="beta", previous_response_id=first.id)
    assert second.output_text == "echo: beta"
    session = httpx.post(f"{server.url}/v1/sessions").json()["id"]
    third = client.responses.create(
        model="keel", input=[{"role": "user", "content": "gamma"}], extra_body={"conversation": session}
    )
    assert third.output_text == "echo: gamma"
    assert conversation(server, session) == [("user", "gamma"), ("assistant", "echo: gamma")]
    events = list(
        client.responses.create(model="keel", input="delta", previous_response_id=second.id, stream=True)
    )
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    deltas = "".join(e.delta for e in events if isinstance(e, ResponseTextDeltaEvent))
    assert deltas == "echo: delta"
    completed = events[-1]
    assert isinstance(completed, ResponseCompletedEvent)
    first_session = completed.response.conversation
    assert first_session is not None
    assert [c for _, c in conversation(server, first_session.id)] == [
        "alpha",
        "echo: alpha",
        "beta",
        "echo: beta",
        "delta",
        "echo: delta",
    ]


def test_a_busy_session_unknown_session_and_failed_model_are_clear_errors(
    client: openai.OpenAI, server: KeelServer
) -> None:
    raw = client.chat.completions.with_raw_response.create(
        model="keel", messages=[{"role": "user", "content": "hi"}]
    )
    session = raw.headers["X-Keel-Session"]
    slow = httpx.post(f"{server.url}/v1/sessions/{session}/turns", json={"input": "slow [sleep=2]"}).json()
    first_started(httpx.Client(base_url=server.url), slow["run_id"])
    with pytest.raises(openai.ConflictError) as busy:
        client.chat.completions.create(
            model="keel",
            messages=[{"role": "user", "content": "x"}],
            extra_headers={"X-Keel-Session": session},
        )
    assert busy.value.code == "session_busy"
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(
            model="keel",
            messages=[{"role": "user", "content": "x"}],
            extra_headers={"X-Keel-Session": "nope"},
        )
    with pytest.raises(openai.BadRequestError) as empty:
        client.chat.completions.create(model="keel", messages=[{"role": "system", "content": "no user"}])
    assert "messages" in str(empty.value)
    with pytest.raises(openai.InternalServerError) as broken:
        client.chat.completions.create(model="keel", messages=[{"role": "user", "content": "[fail]"}])
    assert broken.value.status_code == 502 and broken.value.code == "model_error"
