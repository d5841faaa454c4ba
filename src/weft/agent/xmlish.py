"""A small tolerant reader for the XML-like replies of models: known tags only, no DTDs.

A model's reply is rarely strict XML (an ``&`` in prose, a ``<b>`` inside a text field),
so this reader looks only for the tags it is told (any case, attributes ignored): a
*container* holds other known tags, a *text* tag holds text verbatim up to its closing tag.
It expands only character references and refuses a DTD or an entity declaration.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Final

from weft.errors import ResponseProblem

_FORBIDDEN: Final = re.compile(r"<!(DOCTYPE|ENTITY)", re.IGNORECASE)


class Element:
    """A known tag found in the reply: its children (containers) or its text (text tags)."""

    __slots__ = ("children", "raw", "tag")

    def __init__(self, tag: str) -> None:
        self.tag = tag
        """The tag's name as the reader knows it (canonical spelling)."""
        self.children: list[Element] = []
        self.raw = ""
        """The verbatim inner text of a text tag (entities not yet decoded)."""

    @property
    def text(self) -> str:
        """The inner text, entities decoded and surrounding space stripped."""
        return unescape(self.raw).strip()

    def find(self, tag: str) -> Element | None:
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


class Scanner:
    """Reads the known tags of a reply into a tree; built once per set of tags."""

    __slots__ = ("_canon", "_tag", "_texts")

    def __init__(self, *, containers: frozenset[str], texts: frozenset[str]) -> None:
        names = (*containers, *texts)
        # every spelling is looked up as written, then lower-cased: most replies spell the
        # tags as the prompt does, so the lower-casing is rarely paid
        self._canon = {name.lower(): name for name in names} | {name: name for name in names}
        self._texts = frozenset(texts)
        self._tag = _TAG

    def scan(self, text: str) -> Element:
        """The tree of known tags under a root ``Element("")``; ``ResponseProblem`` (saying where
        and how) if they do not nest."""
        if "<!" in text:
            forbidden = _FORBIDDEN.search(text)
            if forbidden:
                raise ResponseProblem(
                    f"the reply declares <!{forbidden.group(1).upper()}>; DTDs and entity "
                    "declarations are not accepted, write the elements directly"
                )
        canon, texts, search = self._canon, self._texts, self._tag.search
        lower: str | None = None
        root = Element("")
        stack = [root]
        position = 0
        while True:
            match = search(text, position)
            if match is None:
                break
            position = match.end()
            closing, name, self_closing = match.groups()
            tag = canon.get(name)
            if tag is None:
                tag = canon.get(name.lower())
                if tag is None:  # a tag the reader does not know (``<b>`` in prose): text
                    continue
            if tag in texts:
                if closing:
                    raise ResponseProblem(f"</{name}> closes a <{tag}> that was never opened")
                element = Element(tag)
                stack[-1].children.append(element)
                if self_closing:
                    continue
                end = text.find(f"</{name}>", position)
                if end < 0:
                    if lower is None:
                        lower = text.lower()
                    found = _CLOSE.search(lower, position)
                    while found is not None and found.group(1) != tag.lower():
                        found = _CLOSE.search(lower, found.end())
                    if found is None:
                        raise ResponseProblem(f"<{tag}> is opened but never closed; add </{tag}>")
                    end, after = found.start(), found.end()
                else:
                    after = end + len(name) + 3
                element.raw = text[position:end]
                position = after
            elif closing:
                if stack[-1].tag != tag:
                    if not any(e.tag == tag for e in stack[1:]):
                        raise ResponseProblem(f"</{name}> closes a <{tag}> that was never opened")
                    raise ResponseProblem(f"<{stack[-1].tag}> is not closed before </{tag}>")
                stack.pop()
            else:
                element = Element(tag)
                stack[-1].children.append(element)
                if not self_closing:
                    stack.append(element)
        if len(stack) > 1:
            raise ResponseProblem(
                f"<{stack[-1].tag}> is opened but never closed; add </{stack[-1].tag}>"
            )
        return root


_CLOSE: Final = re.compile(r"</([a-z][\w.-]*)\s*>")
# Any tag; the scanner keeps the ones it knows. One generic pattern is about twice as fast
# to search as an alternation of the known names under IGNORECASE.
_TAG: Final = re.compile(r"<(/?)([A-Za-z_][\w.-]*)(?:\s[^<>]*?)?\s*(/?)>")


_ANY_ELEMENT: Final = re.compile(r"<([A-Za-z_][\w.-]*)(?:\s[^<>]*?)?>(.*?)</\1\s*>", re.DOTALL)


def simple_children(text: str) -> dict[str, str] | None:
    """``<name>value</name>`` pairs of a flat element body (``<Args>``), or None if none."""
    pairs = {m.group(1): unescape(m.group(2)).strip() for m in _ANY_ELEMENT.finditer(text)}
    return pairs or None
