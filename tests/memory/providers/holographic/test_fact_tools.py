"""The fact_store / fact_feedback tools: every action, clear errors, never an exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from memory.providers.holographic import FactTools, Retriever, tool_schemas
from tests.memory.providers.holographic.conftest import FactStores

# The `fact_store` tool's actions, in the order its schema lists them.
ACTIONS = ("add", "search", "probe", "related", "reason", "contradict", "update", "remove", "list")


@pytest.fixture
def tools(facts: FactStores) -> FactTools:
    store = facts.open(use_numpy=True)
    return FactTools(store, Retriever(store), min_trust=0.3)


def call(tools: FactTools, name: str, **arguments: JsonValue) -> dict[str, JsonValue]:
    reply = json.loads(tools.handle(name, arguments))
    assert isinstance(reply, dict)
    return reply


def test_schemas_are_in_openai_function_shape() -> None:
    schemas = tool_schemas()
    assert [s["name"] for s in schemas] == ["fact_store", "fact_feedback"]
    for schema in schemas:
        assert set(schema) == {"name", "description", "parameters"}
        parameters = schema["parameters"]
        assert isinstance(parameters, dict)
        assert parameters["type"] == "object"
    store_params = schemas[0]["parameters"]
    assert isinstance(store_params, dict)
    properties = store_params["properties"]
    assert isinstance(properties, dict)
    action = properties["action"]
    assert isinstance(action, dict)
    assert action["enum"] == list(ACTIONS)


def test_every_action_works_end_to_end(tools: FactTools) -> None:
    added = call(
        tools, "fact_store", action="add", content="Alice Smith leads Project Atlas.", category="project"
    )
    assert added == {"fact_id": 1, "created": True}
    call(tools, "fact_store", action="add", content="Alice Smith lives in Lisbon.", tags="home")
    call(tools, "fact_store", action="add", content="Alice Smith lives in Oslo now.")
    assert call(tools, "fact_store", action="add", content="Alice Smith lives in Lisbon.")["created"] is False

    found = call(tools, "fact_store", action="search", query="who leads Atlas")
    results = found["results"]
    assert isinstance(results, list)
    assert isinstance(results[0], dict)
    assert results[0]["content"] == "Alice Smith leads Project Atlas."
    assert results[0]["entities"] == ["Alice Smith", "Project Atlas"]

    assert call(tools, "fact_store", action="probe", entity="Project Atlas")["count"] == 1
    assert call(tools, "fact_store", action="related", entity="lisbon")["count"] == 1
    assert call(tools, "fact_store", action="reason", entities=["Alice Smith", "Project Atlas"])["count"] == 1
    contradictions = call(tools, "fact_store", action="contradict", threshold=0.1)["contradictions"]
    assert isinstance(contradictions, list)
    assert contradictions

    updated = call(tools, "fact_store", action="update", fact_id=2, content="Alice Smith lives in Porto.")
    assert updated["updated"] == {
        "fact_id": 2,
        "content": "Alice Smith lives in Porto.",
        "category": "general",
        "tags": "home",
        "trust": 0.5,
        "entities": ["Alice Smith"],
    }
    assert call(tools, "fact_feedback", action="unhelpful", fact_id=3) == {
        "fact_id": 3,
        "old_trust": 0.5,
        "new_trust": 0.4,
    }
    assert call(tools, "fact_store", action="remove", fact_id=3)["removed"] is not None
    listed = call(tools, "fact_store", action="list", category="project")
    assert listed["count"] == 1


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"action": "add"}, "needs 'content'"),
        ({"action": "add", "content": "   "}, "needs 'content'"),
        ({"action": "search"}, "needs 'query'"),
        ({"action": "probe"}, "needs 'entity'"),
        ({"action": "reason", "entities": []}, "needs 'entities'"),
        ({"action": "remove"}, "needs 'fact_id'"),
        ({"action": "update", "fact_id": 1}, "at least one of"),
        ({"action": "remove", "fact_id": 42}, "fact 42 does not exist"),
        ({"action": "explode"}, "action"),
        ({"action": "add", "content": "x", "colour": "red"}, "colour"),
        ({"action": "list", "limit": 0}, "limit"),
        ({"action": "update", "fact_id": 1, "trust_delta": 5}, "trust_delta"),
        ({"action": "add", "content": "x", "category": "secrets"}, "category"),
    ],
)
def test_bad_arguments_get_a_readable_error_and_change_nothing(
    tools: FactTools, arguments: dict[str, JsonValue], message: str
) -> None:
    reply = json.loads(tools.handle("fact_store", arguments))
    assert message in reply["error"]
    assert call(tools, "fact_store", action="list")["count"] == 0


def test_unknown_tools_and_non_object_arguments_are_errors(tools: FactTools) -> None:
    assert "unknown tool 'nope'" in json.loads(tools.handle("nope", {}))["error"]
    assert "JSON object" in json.loads(tools.handle("fact_store", ["add"]))["error"]
    assert "fact_id" in json.loads(tools.handle("fact_feedback", {"action": "helpful"}))["error"]


def test_lone_surrogates_are_refused_not_crashed_on(tools: FactTools) -> None:
    reply = json.loads(tools.handle("fact_store", {"action": "add", "content": "bad \ud800 text"}))
    assert "unicode" in reply["error"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
field_names = st.sampled_from(
    [
        "action",
        "content",
        "query",
        "entity",
        "entities",
        "fact_id",
        "category",
        "tags",
        "trust_delta",
        "min_trust",
        "threshold",
        "limit",
    ]
)
actions = st.sampled_from([*ACTIONS, "helpful", "unhelpful"])  # fact_feedback takes the last two
arguments = st.fixed_dictionaries({"action": actions | json_values}, optional={}).flatmap(
    lambda base: st.dictionaries(field_names | st.text(max_size=8), json_values, max_size=6).map(
        lambda extra: {**extra, **base}
    )
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["fact_store", "fact_feedback", "other"]), args=arguments | json_values)
def test_the_tools_never_raise_on_arbitrary_json(tools: FactTools, name: str, args: JsonValue) -> None:
    reply = json.loads(tools.handle(name, args))
    assert isinstance(reply, dict)
