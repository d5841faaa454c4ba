"""A small tolerant reader for the XML-like replies of models: known tags only, no DTDs.

A model's reply is foreign data, and rarely strict XML: an ``&`` or ``<`` in prose, a
``<b>`` inside a text field, chatter before and after the element. So this reader does
not parse XML in general. It looks only for the tags it is told (case-insensitive,
attributes ignored), treats everything else as text, and never expands an entity beyond
the five XML ones and numeric references: there are no DTDs, no external entities, no
entity expansion to attack. A reply that declares a DTD or an entity is refused.

Two kinds of known tags: *containers* hold other known tags (``<NextActions>``); *text*
tags hold text, taken verbatim up to their closing tag, so a text field may contain
anything except its own closing tag.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

_TAG: Final = re.compile(r"<(/?)([A-Za-z][\w.-]*)(?:\s[^<>]*?)?\s*(/?)>")
_FORBIDDEN: Final = re.compile(r"<!(DOCTYPE|ENTITY)", re.IGNORECASE)


class XMLProblem(ValueError):
    """The reply's known tags do not nest; the message says where and how."""


@dataclass(slots=True)
class Element:
    """A known tag found in the reply: its children (containers) or its text (text tags)."""

    tag: str
    """The tag's name as the reader knows it (canonical spelling)."""
    children: list[Element] = field(default_factory=list)
    raw: str = ""
    """The verbatim inner text of a text tag (entities not yet decoded)."""

    @property
    def text(self) -> str:
        """The inner text, entities decoded and surrounding space stripped."""
        return unescape(self.raw).strip()

    def find(self, tag: str) -> Element | None:
        """The first child with this (canonical) tag."""
        for child in self.children:
            if child.tag == tag:
                return child
        return None

    def find_all(self, tag: str) -> Iterator[Element]:
        return (child for child in self.children if child.tag == tag)

    def child_text(self, *tags: str) -> str | None:
        """The text of the first child with one of ``tags`` (aliases), or None."""
        for child in self.children:
            if child.tag in tags:
                return child.text
        return None


def unescape(text: str) -> str:
    """Decode character references (``&lt;``, ``&#39;``); nothing else expands."""
    return html.unescape(text) if "&" in text else text


def scan(text: str, *, containers: frozenset[str], texts: frozenset[str]) -> Element:
    """Read the known tags of ``text`` into a tree under a root ``Element("")``.

    ``containers`` and ``texts`` are canonical tag names; a tag matches them in any case.
    Raises ``XMLProblem`` naming the tag and what is wrong (an unclosed tag, a closing
    tag that closes nothing, a DTD).
    """
    forbidden = _FORBIDDEN.search(text)
    if forbidden:
        raise XMLProblem(
            f"the reply declares <!{forbidden.group(1).upper()}>; DTDs and entity "
            "declarations are not accepted, write the elements directly"
        )
    canon = {name.lower(): name for name in (*containers, *texts)}
    root = Element("")
    stack = [root]
    position = 0
    while True:
        match = _TAG.search(text, position)
        if match is None:
            break
        position = match.end()
        closing, name, self_closing = match.group(1), match.group(2), match.group(3)
        tag = canon.get(name.lower())
        if tag is None:
            continue
        if tag in texts:
            if closing:
                raise XMLProblem(f"</{name}> closes a <{tag}> that was never opened")
            element = Element(tag)
            stack[-1].children.append(element)
            if self_closing:
                continue
            end = re.compile(rf"</{re.escape(name)}\s*>", re.IGNORECASE).search(text, position)
            if end is None:
                raise XMLProblem(f"<{tag}> is opened but never closed; add </{tag}>")
            element.raw = text[position : end.start()]
            position = end.end()
        elif closing:
            open_tags = [e.tag for e in stack[1:]]
            if tag not in open_tags:
                raise XMLProblem(f"</{name}> closes a <{tag}> that was never opened")
            if stack[-1].tag != tag:
                raise XMLProblem(f"<{stack[-1].tag}> is not closed before </{tag}>")
            stack.pop()
        else:
            element = Element(tag)
            stack[-1].children.append(element)
            if not self_closing:
                stack.append(element)
    if len(stack) > 1:
        raise XMLProblem(f"<{stack[-1].tag}> is opened but never closed; add </{stack[-1].tag}>")
    return root


_ANY_ELEMENT: Final = re.compile(r"<([A-Za-z_][\w.-]*)(?:\s[^<>]*?)?>(.*?)</\1\s*>", re.DOTALL)


def simple_children(text: str) -> dict[str, str] | None:
    """``<name>value</name>`` pairs of a flat element body (``<Args>``), or None if none."""
    pairs = {m.group(1): unescape(m.group(2)).strip() for m in _ANY_ELEMENT.finditer(text)}
    return pairs or None
