"""A docstring read for a tool: its prose is the tool's description, and its argument
lines (Google, Sphinx or NumPy style) describe the arguments."""

from __future__ import annotations

import inspect
import re
from typing import Final

_GOOGLE_ARGS: Final = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args)\s*:\s*$")
_GOOGLE_OTHER: Final = re.compile(
    r"^(Returns?|Yields?|Raises?|Examples?|Notes?|See Also|Attributes|Warnings?|Todo)\s*:\s*$"
)
_NUMPY_RULE: Final = re.compile(r"^-{3,}\s*$")
_SPHINX: Final = re.compile(r"^:(param|parameter|arg|argument|key|keyword)\s+(.+?)\s*:(.*)$")
_SPHINX_OTHER: Final = re.compile(r"^:(returns?|rtype|raises?|type|yields?|ytype)\b")
_ARG_LINE: Final = re.compile(r"^\*{0,2}([A-Za-z_]\w*)\s*(\([^)]*\))?\s*:(.*)$")
_NUMPY_ARG: Final = re.compile(r"^\*{0,2}([A-Za-z_]\w*)\s*(:.*)?$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The prose of a docstring (everything before its first section) and each argument's
    description, from Google (``Args:``), Sphinx (``:param x:``) or NumPy (``Parameters``
    over a rule of dashes) style."""
    text = inspect.cleandoc(doc) if doc else ""
    lines = text.splitlines()
    prose: list[str] = []
    described: dict[str, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        nxt = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if _GOOGLE_ARGS.match(stripped):
            index = _google_args(lines, index + 1, described)
            continue
        if stripped in ("Parameters", "Other Parameters") and _NUMPY_RULE.match(nxt):
            index = _numpy_args(lines, index + 2, described)
            continue
        sphinx = _SPHINX.match(stripped)
        if sphinx:
            index = _sphinx_arg(lines, index, sphinx, described)
            continue
        if _GOOGLE_OTHER.match(stripped) or _SPHINX_OTHER.match(stripped):
            index = _skip_section(lines, index + 1)
            continue
        if stripped and _NUMPY_RULE.match(nxt):  # another NumPy section: skip it
            index = _skip_numpy(lines, index + 2)
            continue
        if not described:
            prose.append(line)
        index += 1
    return "\n".join(prose).strip(), described


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google_args(lines: list[str], index: int, out: dict[str, str]) -> int:
    base: int | None = None
    name: str | None = None
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        depth = _indent(line)
        if depth == 0:
            break
        if base is None:
            base = depth
        match = _ARG_LINE.match(line.strip()) if depth <= base else None
        if match:
            name = match.group(1)
            out[name] = match.group(3).strip()
        elif name is not None:
            out[name] = f"{out[name]} {line.strip()}".strip()
        index += 1
    return index


def _numpy_args(lines: list[str], index: int, out: dict[str, str]) -> int:
    name: str | None = None
    while index < len(lines):
        line = lines[index]
        nxt = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if line.strip() and _indent(line) == 0 and _NUMPY_RULE.match(nxt):
            break
        if not line.strip():
            index += 1
            continue
        match = _NUMPY_ARG.match(line.strip()) if _indent(line) == 0 else None
        if match:
            name = match.group(1)
            out[name] = ""
        elif name is not None:
            out[name] = f"{out[name]} {line.strip()}".strip()
        index += 1
    return index


def _sphinx_arg(lines: list[str], index: int, match: re.Match[str], out: dict[str, str]) -> int:
    name = match.group(2).split()[-1].lstrip("*")
    parts = [match.group(3).strip()]
    index += 1
    while index < len(lines) and lines[index].strip() and _indent(lines[index]) > 0:
        parts.append(lines[index].strip())
        index += 1
    out[name] = " ".join(p for p in parts if p)
    return index


def _skip_section(lines: list[str], index: int) -> int:
    while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > 0):
        if lines[index].strip() and _SPHINX.match(lines[index].strip()):
            break
        index += 1
    return index


def _skip_numpy(lines: list[str], index: int) -> int:
    while index < len(lines):
        nxt = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if lines[index].strip() and _NUMPY_RULE.match(nxt):
            break
        index += 1
    return index
