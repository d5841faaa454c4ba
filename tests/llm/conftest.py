"""Fixtures of the model-layer tests: a sleep that records, no provider environment, and
LiteLLM's proxy as a real compatible server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from litellm_proxy import Proxy, start, stop
from llm_fakes import Sleeps


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never pick up a developer's real keys or base URLs."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def litellm_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    """LiteLLM's proxy, serving mock models over the OpenAI and Anthropic APIs, for the
    session (started by the first test that asks for it)."""
    proxy, process = start(tmp_path_factory.mktemp("litellm"))
    try:
        yield proxy
    finally:
        stop(process)
