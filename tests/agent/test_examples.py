"""Every script in examples/ runs, and says what its pattern shows."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "pattern1_feedback_loop",
            ["<ActionType>Navigation.VisitURL</ActionType>", "(2 iterations, stopped: completed)"],
        ),
        (
            "pattern2_sequential_accumulation",
            ["ActionC sees ['initial_value', 'ActionA_data', 'ActionB_data']"],
        ),
        (
            "pattern3_parallel_branches",
            [
                "C1: previous_action_results=['init', 'A1', ['B1', 'B2']]",
                "B1: previous_action_results=['init', 'A1'] notes=['notes/A1', 'notes/B1']",
            ],
        ),
        (
            "pattern4_planning_dag",
            [
                "ORDER_STARBUCKS: Order from Starbucks: done, using the attached recipe",
                "<ID>SUGGEST_RECIPE_STARBUCKS</ID>",
            ],
        ),
        (
            "pattern5_conversation",
            [
                "User: What are qubits?\nAgent: Qubits are the fundamental units...\n"
                "User: How do they differ"
            ],
        ),
        ("pattern6_action_memory", ["Memory: The user is Ada Lovelace, a returning visitor."]),
    ],
)
def test_a_pattern_example_runs(
    name: str, expected: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    load(name).main()
    out = capsys.readouterr().out
    for text in expected:
        assert text in out


@pytest.fixture
def no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("no_openai_env")
def test_the_openai_example_says_what_it_needs_without_a_base_url(
    capsys: pytest.CaptureFixture[str],
) -> None:
    load("openai_agent").main()
    assert "OPENAI_BASE_URL is not set" in capsys.readouterr().out


@pytest.mark.usefixtures("no_openai_env")
def test_the_openai_example_runs_against_a_mock_server(capsys: pytest.CaptureFixture[str]) -> None:
    from weft.llm import OpenAIChatModel

    replies = iter(
        [
            "<StructuredResponse><TaskStatus>Ongoing</TaskStatus><NextActions><Action>"
            '<ActionType>add</ActionType><Args>{"a": 19, "b": 23}</Args></Action>'
            "</NextActions></StructuredResponse>",
            "<StructuredResponse><InstantResponse>The sum is 42.</InstantResponse>"
            "<TaskStatus>Completed</TaskStatus></StructuredResponse>",
        ]
    )
    prompts: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body: dict[str, Any] = json.loads(request.content)
        prompts.append(body["messages"][-1]["content"])
        message = {"role": "assistant", "content": next(replies)}
        return httpx.Response(200, json={"choices": [{"message": message}]})

    model = OpenAIChatModel(
        "test-model", base_url="http://mock/v1", transport=httpx.MockTransport(handler)
    )
    load("openai_agent").main(model)
    out = capsys.readouterr().out
    assert "iteration 0: Ongoing, actions ['add']" in out
    assert "The sum is 42." in out
    assert "<ActionResult>42</ActionResult>" in prompts[1]
