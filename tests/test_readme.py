"""Every example in the README and in docs/ runs (STYLE.md: the front door never lies).

Each ```python block of README.md and docs/*.md is executed. A *section* is a ``## `` heading
with everything under it (its ``###`` subsections too) up to the next ``## ``; its blocks run
in order in one namespace, so a block may use what an earlier block of its section made, and
every section starts from an empty namespace in its own empty working directory (files such as
``chat.db`` land there). A block may ``await`` at top level, as in an async function; each
section has one event loop for that. A failure names the file, the section, and the block's
line and first line.

Nothing is mocked behind a block's back. The one thing the test lends a section is what its
prose says it lends: "Models" gets ``openai_api`` and ``anthropic_api``, two
``httpx.MockTransport`` s answering as the providers do, and placeholder API keys in the
environment, so its adapters run offline; the test checks the calls did reach them.

Bash blocks are not run, but the README's first screen is held to what it promises: exactly
two set-up commands, one that installs weft and runs the demo and one that runs the tests.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(slots=True)
class Block:
    language: str
    line: int  # of the opening fence, 1-based
    code: str

    @property
    def first_line(self) -> str:
        return next((text for text in self.code.splitlines() if text.strip()), "")


@dataclass(slots=True)
class Section:
    document: Path
    title: str
    blocks: list[Block] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.document.name}::{self.title}"


def sections_of(document: Path) -> list[Section]:
    """The document cut at its ``## `` headings; the text before the first is the title's."""
    lines = document.read_text().splitlines()
    sections = [Section(document, lines[0].lstrip("# ").strip() if lines else document.name)]
    fence: Block | None = None
    for number, text in enumerate(lines, start=1):
        match = FENCE.match(text)
        if fence is not None:
            if text.strip() == "```":
                sections[-1].blocks.append(fence)
                fence = None
            else:
                fence.code += text + "\n"
        elif match is not None:
            fence = Block(match.group(1), number, "")
        elif text.startswith("## "):
            sections.append(Section(document, text[3:].strip()))
    assert fence is None, f"{document.name}: the block opened on line {fence.line} never closes"
    return sections


SECTIONS = [
    section
    for document in DOCUMENTS
    for section in sections_of(document)
    if any(block.language == "python" for block in section.blocks)
]


# What a section's prose says the test lends it.


def openai_server(request: httpx.Request) -> httpx.Response:
    """An OpenAI-compatible server that answers every chat completion with one short text."""
    body = json.loads(request.content)
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Tasks a and b are done."},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18},
        },
    )


def anthropic_server(request: httpx.Request) -> httpx.Response:
    """Anthropic's Messages API, answering every request with one short text."""
    body = json.loads(request.content)
    return httpx.Response(
        200,
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": "Noted: due Friday."}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 20, "output_tokens": 5},
        },
    )


class Recording:
    """A handler that counts the requests it answers."""

    def __init__(self, handler: Callable[[httpx.Request], httpx.Response]) -> None:
        self.handler = handler
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.handler(request)


def lent_to(
    section: Section, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], list[Recording]]:
    """What the section's prose says it is lent (names for its namespace), and the
    recorders that must have been called once its blocks ran."""
    if section.title != "Models":
        return {}, []
    monkeypatch.setenv("OPENAI_API_KEY", "sk-placeholder")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-placeholder")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    openai, anthropic = Recording(openai_server), Recording(anthropic_server)
    lent = {
        "openai_api": httpx.MockTransport(openai),
        "anthropic_api": httpx.MockTransport(anthropic),
    }
    return lent, [openai, anthropic]


def run_block(
    block: Block, section: Section, namespace: dict[str, Any], runner: asyncio.Runner
) -> None:
    where = f"{section.document.name}, section {section.title!r}, block on line {block.line}"
    try:
        code = compile(
            block.code,
            f"<{where}>",
            "exec",
            flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
            dont_inherit=True,
        )
        result = eval(code, namespace)  # a block with a top-level await gives a coroutine
        if asyncio.iscoroutine(result):
            runner.run(result)
    except Exception as error:
        raise AssertionError(
            f"{where} ({block.first_line.strip()!r}) failed: {type(error).__name__}: {error}"
        ) from error


@pytest.mark.parametrize("section", SECTIONS, ids=lambda section: section.id)
def test_every_python_block_of_the_section_runs(
    section: Section, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    lent, providers = lent_to(section, monkeypatch)
    namespace: dict[str, Any] = {"__name__": "__readme__", **lent}
    with asyncio.Runner() as runner:
        for block in section.blocks:
            if block.language == "python":
                run_block(block, section, namespace, runner)
    for provider in providers:
        assert provider.requests, (
            f"section {section.title!r} never called {provider.handler.__name__}"
        )


def test_the_blocks_are_found() -> None:
    pages = {section.document.name for section in SECTIONS}
    assert {"store.md", "graphs.md", "agents.md", "plans.md", "turns.md"} <= pages
    assert any(section.title == "Models" for section in SECTIONS)  # the one with lent transports


def test_every_page_the_readme_links_to_exists() -> None:
    links = re.findall(r"\]\((docs/[\w.-]+\.md)\)", (ROOT / "README.md").read_text())
    assert links, "the README links to the docs pages"
    missing = [link for link in links if not (ROOT / link).is_file()]
    assert not missing, missing
    unlinked = sorted(
        page.name for page in (ROOT / "docs").glob("*.md") if f"docs/{page.name}" not in links
    )
    assert not unlinked, f"docs pages the README does not link to: {unlinked}"


def test_user_docs_speak_of_the_product() -> None:
    words = re.compile(r"\bseed (00\d)|\bthe seed'?s?\b|DESIGN\.md|STYLE\.md|the issue", re.I)
    found = [
        f"{document.name}:{number}: {line.strip()}"
        for document in DOCUMENTS
        for number, line in enumerate(document.read_text().splitlines(), start=1)
        if words.search(line)
    ]
    assert not found, found


def test_the_first_screen_has_exactly_the_two_set_up_commands() -> None:
    sections = sections_of(ROOT / "README.md")
    first = sections[0].blocks[0]
    assert first.language == "bash"
    assert first.line <= 25, "the set-up commands must be on the README's first screen"
    commands = [
        line.strip()
        for line in first.code.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    assert len(commands) == 2, commands
    install, test = commands
    assert "pip install" in install and install.endswith("weft demo"), install
    assert "pip install" in test and test.endswith("pytest"), test
