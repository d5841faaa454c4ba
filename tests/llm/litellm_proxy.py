"""LiteLLM's proxy as a real OpenAI- and Anthropic-compatible server with no model behind it:
every model of its config answers with a ``mock_response`` (text, tool calls, or an error
status), so weft's adapters speak to a real server over real HTTP, offline.

Started once per test session on a free port (:func:`start`), with its own master key; its
log is kept and shown if it does not come up; it is stopped (SIGTERM, then SIGKILL) at the end.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

READY_WITHIN = 180.0  # seconds; the proxy imports a lot, and CI shares two cores

TOOL_CALLS_REPLY = {
    "id": "chatcmpl-mock-tools",
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_paris",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'},
                    },
                    {
                        "id": "call_rome",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"location": "Rome"}'},
                    },
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
}

MODELS = {
    "mock-text": "Hello from the mock.",
    "mock-tools": TOOL_CALLS_REPLY,
    "mock-rate-limited": "litellm.RateLimitError",
    "mock-broken": "litellm.InternalServerError",
}


def config() -> str:
    """The proxy's YAML config (JSON is YAML): one OpenAI-routed model per mock."""
    entries = [
        {
            "model_name": name,
            "litellm_params": {
                "model": "openai/gpt-4o-mini",
                "api_key": "sk-never-sent",
                "mock_response": reply,
            },
        }
        for name, reply in MODELS.items()
    ]
    return json.dumps({"model_list": entries, "litellm_settings": {"num_retries": 0}}, indent=1)


@dataclass(frozen=True)
class Proxy:
    url: str
    key: str
    log: Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def executable() -> str:
    found = Path(sys.executable).with_name("litellm")
    if not found.exists():
        raise RuntimeError(
            f"LiteLLM's proxy is not installed beside {sys.executable}; the tests need it: "
            "pip install -e '.[dev]' (the dev extra has litellm[proxy])"
        )
    return str(found)


def start(workdir: Path) -> tuple[Proxy, subprocess.Popen[bytes]]:
    """Start the proxy and wait until it serves its models; a clear error if it cannot."""
    port, key = free_port(), "sk-weft-test-" + secrets.token_hex(24)
    config_file, log = workdir / "litellm.yaml", workdir / "litellm.log"
    config_file.write_text(config())
    env = {
        **os.environ,
        "LITELLM_MASTER_KEY": key,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # never fetch the price list from the network
        "LITELLM_TELEMETRY": "False",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    command = [executable(), "--config", str(config_file), "--host", "127.0.0.1"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env=env,
            start_new_session=True,
        )
    proxy = Proxy(f"http://127.0.0.1:{port}", key, log)
    try:
        wait_until_ready(proxy, process)
    except BaseException:
        stop(process)
        raise
    return proxy, process


def wait_until_ready(proxy: Proxy, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_WITHIN
    headers = {"authorization": f"Bearer {proxy.key}"}
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"LiteLLM's proxy exited with {process.returncode} before it was ready; "
                f"its log ({proxy.log}) ends:\n{tail(proxy.log)}"
            )
        try:
            answer = httpx.get(f"{proxy.url}/v1/models", headers=headers, timeout=2)
        except httpx.TransportError:
            answer = None
        if answer is not None and answer.status_code == 200:
            served = {model["id"] for model in answer.json()["data"]}
            if set(MODELS) <= served:
                return
        time.sleep(0.5)
    raise RuntimeError(
        f"LiteLLM's proxy did not serve its models within {READY_WITHIN:g}s at {proxy.url}; "
        f"its log ({proxy.log}) ends:\n{tail(proxy.log)}"
    )


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(15)


def tail(log: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
