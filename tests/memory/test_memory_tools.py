"""The three memory tools: definitions, argument handling, results and limits."""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import re
import time
from datetime import UTC, datetime
from typing import Any

import pydantic
import pytest
from jsonschema import Draft202012Validator

from weft.errors import AgentMemoryError
from weft.memory import AgentMemory, MemoryTool, MemoryTools, memory_tools
from weft.store import Entry, Store, register_type, value_bytes

ISO_MS_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def memory() -> AgentMemory:
    memory = AgentMemory()
    memory.set("input:topic", "forks", source="caller", title="Topic")
    memory.set("step:search", [1, 2, 3], source="search")
    memory.set(
        "task:research",
        {"findings": ["alpha"]},
        source="research",
        title="Research findings",
        description="Top sources.",
    )
    return memory


@pytest.fixture
def tools(memory: AgentMemory) -> MemoryTools:
    return memory_tools(memory, source="agent-a")


def ok(result: dict[str, Any]) -> dict[str, Any]:
    json.dumps(result)  # every result is JSON-ready
    assert result["ok"] is True, result
    return result


def err(result: dict[str, Any]) -> str:
    json.dumps(result)
    assert result["ok"] is False, result
    assert set(result) == {"ok", "error"}
    message: str = result["error"]
    return message


# ---------------------------------------------------------------- definitions


def test_tools_unpack_and_by_attribute(tools: MemoryTools) -> None:
    list_, read, write = tools
    assert (list_, read, write) == (tools.memory_list, tools.memory_read, tools.memory_write)
    assert [t.name for t in tools] == ["memory_list", "memory_read", "memory_write"]
    assert all(isinstance(t, MemoryTool) for t in tools)


@pytest.mark.parametrize("name", ["memory_list", "memory_read", "memory_write"])
def test_openai_definition_shape(tools: MemoryTools, name: str) -> None:
    tool = getattr(tools, name)
    definition = tool.openai()
    assert definition == {
        "type": "function",
        "function": {
            "name": name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }
    json.dumps(definition)


@pytest.mark.parametrize("name", ["memory_list", "memory_read", "memory_write"])
def test_anthropic_definition_shape(tools: MemoryTools, name: str) -> None:
    tool = getattr(tools, name)
    assert tool.anthropic() == {
        "name": name,
        "description": tool.description,
        "input_schema": tool.parameters,
    }


@pytest.mark.parametrize("name", ["memory_list", "memory_read", "memory_write"])
def test_parameters_are_valid_closed_json_schemas(tools: MemoryTools, name: str) -> None:
    schema = getattr(tools, name).parameters
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False


def test_changing_a_returned_schema_changes_nothing(tools: MemoryTools) -> None:
    tools.memory_read.parameters["properties"].clear()
    tools.memory_read.openai()["function"]["parameters"]["required"].clear()
    assert "keys" in tools.memory_read.parameters["properties"]
    assert not tools.memory_read({"keys": "nope"})["ok"]


def test_descriptions_speak_to_the_model(tools: MemoryTools) -> None:
    assert "memory_read" in tools.memory_list.description
    assert "shared:" in tools.memory_write.description
    assert "missing" in tools.memory_read.description


def test_collection_definitions_and_call_by_name(tools: MemoryTools) -> None:
    assert [d["function"]["name"] for d in tools.openai()] == [t.name for t in tools]
    assert [d["name"] for d in tools.anthropic()] == [t.name for t in tools]
    assert ok(tools.call("memory_list", "{}"))["total"] == 3
    assert "memory_list" in err(tools.call("memory_delete", "{}"))


# ------------------------------------------------------------------ arguments


def test_json_string_and_dict_arguments_agree(tools: MemoryTools) -> None:
    as_text = tools.memory_list('{"kind": "task_result"}')
    as_dict = tools.memory_list({"kind": "task_result"})
    assert as_text == as_dict
    assert [e["key"] for e in ok(as_text)["entries"]] == ["task:research"]


@pytest.mark.parametrize("arguments", ["", "  ", None])
def test_empty_arguments_mean_no_arguments(tools: MemoryTools, arguments: str | None) -> None:
    assert ok(tools.memory_list(arguments))["total"] == 3


@pytest.mark.parametrize(
    ("tool", "arguments", "fragment"),
    [
        ("memory_list", "not json", "not valid JSON"),
        ("memory_list", '{"kind": "task_result"', "not valid JSON"),
        ("memory_list", "[1, 2]", "JSON object"),
        ("memory_list", '"task:x"', "JSON object"),
        ("memory_list", "42", "JSON object"),
        ("memory_list", '{"kind": NaN}', "NaN"),
        ("memory_list", 42, "JSON object"),
        ("memory_list", {"kind": "bogus"}, "'kind'"),
        ("memory_list", {"kind": ["task_result", "nope"]}, "'kind'"),
        ("memory_list", {"kind": []}, "'kind'"),
        ("memory_list", {"key_prefix": 3}, "'key_prefix'"),
        ("memory_list", {"sources": "research"}, "'sources'"),
        ("memory_list", {"sources": [1]}, "sources[0]"),
        ("memory_list", {"limit": 5}, "unknown argument 'limit'"),
        ("memory_read", {}, "missing required argument 'keys'"),
        ("memory_read", {"keys": []}, "'keys'"),
        ("memory_read", {"keys": "task:research"}, "'keys'"),
        ("memory_read", {"keys": [1]}, "keys[0]"),
        ("memory_read", {"keys": [f"step:{i}" for i in range(51)]}, "1 to 50"),
        ("memory_read", {"keys": ["task:x"], "values": True}, "unknown argument 'values'"),
        ("memory_write", {"value": 1}, "missing required argument 'key'"),
        ("memory_write", {"key": "k"}, "missing required argument 'value'"),
        ("memory_write", {"key": "", "value": 1}, "'key'"),
        ("memory_write", {"key": 7, "value": 1}, "'key'"),
        ("memory_write", {"key": "k" * 201, "value": 1}, "'key'"),
        ("memory_write", {"key": "k", "value": 1, "title": 5}, "'title'"),
        ("memory_write", {"key": "k", "value": 1, "title": "t" * 201}, "'title'"),
        ("memory_write", {"key": "k", "value": 1, "description": "d" * 2001}, "'description'"),
        ("memory_write", {"key": "k", "value": 1, "kind": "task_result"}, "unknown argument"),
    ],
)
def test_bad_arguments_return_an_error_naming_the_field(
    memory: AgentMemory, tool: str, arguments: Any, fragment: str
) -> None:
    before = memory.store.last_seq
    result = memory_tools(memory).call(tool, arguments)
    message = err(result)
    assert fragment in message
    assert message.startswith(tool)
    assert memory.store.last_seq == before


def test_read_key_cap_error_says_how_to_fix(tools: MemoryTools) -> None:
    message = err(tools.memory_read({"keys": [f"step:{i}" for i in range(51)]}))
    assert "1 to 50" in message
    assert "several calls" in message


def test_internal_failure_becomes_an_error_result(
    tools: MemoryTools, memory: AgentMemory, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    def explode(**_: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(memory, "_select", explode)
    with caplog.at_level(logging.ERROR, logger="weft.memory.tools"):
        message = err(tools.memory_list({}))
    assert "RuntimeError" in message
    assert any("memory_list" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- memory_list


def test_list_returns_metadata_only(tools: MemoryTools) -> None:
    result = ok(tools.memory_list({}))
    assert (result["total"], result["returned"], result["truncated"]) == (3, 3, False)
    entry = result["entries"][0]
    assert set(entry) == {
        "key",
        "kind",
        "title",
        "description",
        "source",
        "value_bytes",
        "created_at",
        "updated_at",
    }
    assert entry["key"] == "task:research"  # newest first
    assert entry["kind"] == "task_result"
    assert entry["value_bytes"] == len(b'{"findings":["alpha"]}')
    assert "alpha" not in json.dumps(result)


def test_list_filters(tools: MemoryTools, memory: AgentMemory) -> None:
    memory.set("shared:note", 1, source="agent-b")
    keys = lambda args: [e["key"] for e in ok(tools.memory_list(args))["entries"]]  # noqa: E731
    assert keys({"kind": "input"}) == ["input:topic"]
    assert keys({"kind": ["input", "shared"]}) == ["shared:note", "input:topic"]
    assert keys({"key_prefix": "step:"}) == ["step:search"]
    assert keys({"sources": ["agent-b", "caller"]}) == ["shared:note", "input:topic"]
    assert keys({"kind": "shared", "sources": ["caller"]}) == []
    assert "note" in tools.memory_list({"kind": "shared", "sources": ["caller"]})


def test_list_keeps_the_200_most_recent_newest_first() -> None:
    memory = AgentMemory()
    for i in range(250):
        memory.set(f"step:s{i:03d}", i)
    memory.set("step:s000", "rewritten: now the newest")
    result = ok(memory_tools(memory).memory_list({}))
    keys = [e["key"] for e in result["entries"]]
    assert (result["total"], result["returned"], result["truncated"]) == (250, 200, True)
    assert keys[0] == "step:s000"
    assert keys[1] == "step:s249"
    assert keys[-1] == "step:s051"
    assert "step:s050" not in keys


def test_value_bytes_counts_utf8_bytes_not_characters() -> None:
    memory = AgentMemory()
    memory.set("shared:greeting", "héllo wörld ✓ 日本")
    entry = ok(memory_tools(memory).memory_list({}))["entries"][0]
    text = json.dumps("héllo wörld ✓ 日本", ensure_ascii=False)
    assert entry["value_bytes"] == len(text.encode("utf-8")) == value_bytes("héllo wörld ✓ 日本")
    assert entry["value_bytes"] > len(text)


def test_list_and_read_use_one_time_format(tools: MemoryTools) -> None:
    listed = ok(tools.memory_list({}))["entries"][0]
    read = ok(tools.memory_read({"keys": ["task:research"]}))["entries"]["task:research"]
    for stamp in (listed["created_at"], listed["updated_at"], read["created_at"]):
        assert ISO_MS_Z.match(stamp), stamp
    assert listed["created_at"] == read["created_at"]


def test_tool_list_with_prefix_reads_only_that_prefix(
    big_memory: AgentMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes: list[int] = []
    entries = Store.entries

    def spy(self: Store, **kwargs: Any) -> list[Entry]:
        found = entries(self, **kwargs)
        sizes.append(len(found))
        return found

    monkeypatch.setattr(Store, "entries", spy)
    tool = memory_tools(big_memory).memory_list
    assert ok(tool('{"key_prefix": "step:n00001"}'))["returned"] == 10
    assert sizes == [10]


# ---------------------------------------------------------------- memory_read


def test_read_returns_values_and_missing(tools: MemoryTools) -> None:
    result = ok(tools.memory_read('{"keys": ["task:research", "step:nope", "task:research"]}'))
    assert list(result["entries"]) == ["task:research"]
    entry = result["entries"]["task:research"]
    assert entry["value"] == {"findings": ["alpha"]}
    assert (entry["kind"], entry["title"], entry["source"]) == (
        "task_result",
        "Research findings",
        "research",
    )
    assert entry["description"] == "Top sources."
    assert result["missing"] == ["step:nope"]


def test_read_never_reveals_state(tools: MemoryTools, memory: AgentMemory) -> None:
    memory.store.write("state", "secret", "s3cr3t")
    result = ok(tools.memory_read({"keys": ["state:secret"]}))
    assert result["missing"] == ["state:secret"]
    assert "s3cr3t" not in json.dumps(result)


@register_type
@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


@register_type
class Person(pydantic.BaseModel):
    name: str
    born: datetime


def test_read_renders_values_as_plain_json(memory: AgentMemory) -> None:
    born = datetime(2000, 1, 2, 3, 4, 5, tzinfo=UTC)
    memory.set(
        "step:rich",
        {
            "point": Point(x=1, y=2),
            "person": Person(name="Ada", born=born),
            "when": born,
            "blob": b"\x00\xff",
        },
    )
    value = ok(memory_tools(memory).memory_read({"keys": ["step:rich"]}))["entries"]["step:rich"][
        "value"
    ]
    assert value == {
        "point": {"x": 1, "y": 2},
        "person": {"name": "Ada", "born": "2000-01-02T03:04:05Z"},
        "when": "2000-01-02T03:04:05+00:00",
        "blob": base64.b64encode(b"\x00\xff").decode(),
    }
    assert "__weft__" not in json.dumps(value)


# --------------------------------------------------------------- memory_write


def test_write_stores_under_shared_with_the_writer(tools: MemoryTools, memory: AgentMemory) -> None:
    result = ok(
        tools.memory_write(
            '{"key": "top_source", "value": {"url": "u"}, "title": "Top", "description": "D"}'
        )
    )
    assert (result["key"], result["kind"]) == ("shared:top_source", "shared")
    assert ISO_MS_Z.match(result["created_at"])
    assert ISO_MS_Z.match(result["updated_at"])
    entry = memory.get("shared:top_source")
    assert entry is not None
    assert (entry.value, entry.title, entry.description) == ({"url": "u"}, "Top", "D")
    assert entry.source == "agent-a"


def test_per_call_source_overrides_the_default(tools: MemoryTools, memory: AgentMemory) -> None:
    ok(tools.memory_write({"key": "k", "value": 1}, source="agent-b"))
    assert memory.get("shared:k").source == "agent-b"  # type: ignore[union-attr]
    ok(tools.call("memory_write", {"key": "k2", "value": 1}, source="agent-c"))
    assert memory.get("shared:k2").source == "agent-c"  # type: ignore[union-attr]
    ok(memory_tools(memory).memory_write({"key": "k3", "value": 1}))
    assert memory.get("shared:k3").source is None  # type: ignore[union-attr]


def test_shared_prefix_is_not_doubled(tools: MemoryTools, memory: AgentMemory) -> None:
    assert ok(tools.memory_write({"key": "shared:top", "value": 1}))["key"] == "shared:top"
    assert not memory.store.has("shared", "shared:top")


def test_other_colons_stay_inside_the_shared_name(tools: MemoryTools) -> None:
    assert ok(tools.memory_write({"key": "notes:v2", "value": 1}))["key"] == "shared:notes:v2"


@pytest.mark.parametrize(
    "key",
    [
        "task:bogus",
        "step:x",
        "input:x",
        "state:x",
        "shared:task:bogus",
        " Task:bogus",
        "STATE:x",
        "task_result:x",
        "shared:shared:x",
    ],
)
def test_write_to_another_namespace_is_refused_and_writes_nothing(
    tools: MemoryTools, memory: AgentMemory, key: str
) -> None:
    before = memory.store.last_seq
    message = err(tools.memory_write({"key": key, "value": {"findings": ["fake"]}}))
    assert repr(key) in message
    assert "nothing was written" in message
    assert memory.store.last_seq == before
    assert not memory.has("task:bogus")
    assert not memory.store.has("shared", "task:bogus")


@pytest.mark.parametrize("key", ["shared:", "   "])
def test_write_with_an_empty_name_is_refused(tools: MemoryTools, key: str) -> None:
    assert "key" in err(tools.memory_write({"key": key, "value": 1}))


def test_write_size_limit(memory: AgentMemory) -> None:
    tools = memory_tools(memory, max_value_bytes=10)
    ok(tools.memory_write({"key": "small", "value": "12345678"}))  # 10 bytes with quotes
    message = err(tools.memory_write({"key": "big", "value": "é" * 5}))  # 12 bytes
    assert "12 bytes" in message
    assert "10" in message
    assert not memory.has("shared:big")


def test_default_size_limit_is_256_kib(tools: MemoryTools, memory: AgentMemory) -> None:
    ok(tools.memory_write({"key": "fits", "value": "x" * (256 * 1024 - 2)}))
    err(tools.memory_write({"key": "over", "value": "x" * (256 * 1024 - 1)}))
    assert not memory.has("shared:over")


def test_write_refuses_non_json_python_values(tools: MemoryTools, memory: AgentMemory) -> None:
    assert "JSON" in err(tools.memory_write({"key": "k", "value": {1, 2}}))
    assert "JSON" in err(tools.memory_write({"key": "k", "value": float("nan")}))
    assert not memory.has("shared:k")


def test_rewrite_through_the_tool_keeps_created_at(tools: MemoryTools) -> None:
    first = ok(tools.memory_write({"key": "k", "value": 1}))
    time.sleep(0.002)
    second = ok(tools.memory_write({"key": "k", "value": 2}))
    assert second["created_at"] == first["created_at"]
    assert second["updated_at"] > first["updated_at"]


def test_max_value_bytes_must_be_positive(memory: AgentMemory) -> None:
    with pytest.raises(AgentMemoryError, match="max_value_bytes=0: expected a whole number"):
        memory_tools(memory, max_value_bytes=0)
