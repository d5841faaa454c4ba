"""A small tolerant reader for the XML-like replies of models: known tags only, no DTDs.

A model's reply is rarely strict XML (an ``&`` in prose, a ``<b>`` inside a text field),
so this reader looks only for the tags it is told (any case, attributes ignored): a
*container* holds other known tags, a *text* tag holds text verbatim up to its closing tag.
It expands only character references and refuses a DTD or an entity declaration.

One pass over the reply, linear in its length whatever it holds (unclosed tags, closing
tags in another case, tags nested ten thousand deep): no recursion, and no part of the
reply is searched twice for the same closing tag.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Mapping
from typing import Final

from weft.errors import ResponseProblem

_FORBIDDEN: Final = re.compile(r"<!(DOCTYPE|ENTITY)", re.IGNORECASE)


class Element:
    """A known container found in the reply: its containers in order, and the verbatim
    inner text of its text tags (the first of each; entities not yet decoded)."""

    __slots__ = ("children", "fields", "tag")

    def __init__(self, tag: str) -> None:
        self.tag = tag
        """The tag's name as the reader knows it (canonical spelling)."""
        self.children: list[Element] = []
        """The containers directly inside, in order."""
        self.fields: dict[str, str] = {}
        """``{text tag: verbatim inner text}`` of the first of each text tag directly inside
        (an alias is kept under the name it stands for)."""

    def find(self, tag: str) -> Element | None:
        """The first container ``tag`` directly inside, or None."""
        for child in self.children:
            if child.tag == tag:
                return child
        return None

    def find_all(self, tag: str) -> Iterator[Element]:
        return (child for child in self.children if child.tag == tag)

    def text(self, tag: str) -> str | None:
        """The text of the first text tag ``tag`` directly inside, entities decoded and
        surrounding space stripped; None if there is none."""
        return clean(self.fields.get(tag))


def clean(raw: str | None) -> str | None:
    """A text tag's verbatim text, entities decoded and surrounding space stripped (None:
    no such tag)."""
    if raw is None:
        return None
    return (html.unescape(raw) if "&" in raw else raw).strip()


def unescape(text: str) -> str:
    """Decode character references (``&lt;``, ``&#39;``); nothing else expands."""
    return html.unescape(text) if "&" in text else text


class Scanner:
    """Reads the known tags of a reply into a tree; built once per set of tags.

    ``aliases`` maps a text tag to the one it stands for (``Type`` for ``ActionType``): the
    first of either is the field's text."""

    __slots__ = ("_known",)

    def __init__(
        self,
        *,
        containers: frozenset[str],
        texts: frozenset[str],
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        aliases = aliases or {}
        kinds: dict[str, tuple[str, str | None]] = {name: (name, None) for name in containers}
        kinds |= {name: (name, aliases.get(name, name)) for name in texts}
        # every spelling is looked up as written, then lower-cased: most replies spell the
        # tags as the prompt does, so the lower-casing is rarely paid
        self._known = {name.lower(): kind for name, kind in kinds.items()} | kinds

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
        known = self._known
        lower: str | None = None
        unclosed: set[str] = set()  # closings not found as written: never searched again
        root = node = Element("")
        stack = [root]
        skip = 0  # the tags before this offset are inside a text tag's text
        for match in _TOKEN.finditer(text):
            if skip:
                if match.start() < skip:
                    continue
                skip = 0
            closing, name, self_closing, inner = match.groups()
            if closing is not None:
                kind = known.get(closing)
                if kind is None:
                    kind = known.get(closing.lower())
                    if kind is None:  # a tag the reader does not know (``<b>`` in prose)
                        continue
                tag = kind[0]
                if kind[1] is not None:
                    raise ResponseProblem(f"</{closing}> closes a <{tag}> that was never opened")
                if node.tag != tag:
                    if not any(e.tag == tag for e in stack[1:]):
                        raise ResponseProblem(
                            f"</{closing}> closes a <{tag}> that was never opened"
                        )
                    raise ResponseProblem(f"<{node.tag}> is not closed before </{tag}>")
                stack.pop()
                node = stack[-1]
                continue
            kind = known.get(name)
            if kind is None:
                kind = known.get(name.lower())
                if kind is None:
                    continue
            tag, field = kind
            if field is None:  # a container (closed at once if ``inner`` is not None)
                element = Element(tag)
                node.children.append(element)
                if self_closing is None and inner is None:
                    stack.append(element)
                    node = element
                continue
            if self_closing is not None:
                inner = ""
            elif inner is None:  # its text holds a '<', or its closing tag is spelled otherwise
                position = match.end()
                end = -1 if name in unclosed else text.find(f"</{name}>", position)
                if end < 0:
                    unclosed.add(name)
                    if lower is None:  # the same length as the text, so its offsets hold
                        lower = text.lower() if text.isascii() else text.translate(_ASCII_LOWER)
                    end, skip = _closing(lower, position, tag)
                else:
                    skip = end + len(name) + 3
                inner = text[position:end]
            if field not in node.fields:
                node.fields[field] = inner
        if len(stack) > 1:
            raise ResponseProblem(f"<{node.tag}> is opened but never closed; add </{node.tag}>")
        return root


def _closing(lower: str, position: int, tag: str) -> tuple[int, int]:
    """Where the closing tag of the text tag ``tag`` opened before ``position`` starts and
    ends, in any case and with space before its ``>`` (``lower``: the reply lower-cased)."""
    want = tag.lower()
    found = _CLOSE.search(lower, position)
    while found is not None and found.group(1) != want:
        found = _CLOSE.search(lower, found.end())
    if found is None:
        raise ResponseProblem(f"<{tag}> is opened but never closed; add </{tag}>")
    return found.start(), found.end()


_ASCII_LOWER: Final = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_CLOSE: Final = re.compile(r"</([a-z][\w.-]*)\s*>")
# One token: a closing tag (group 1: its name), or an opening tag (2: its name; 3: "/" if
# it closes itself) with, when its text holds no '<' and its closing tag is spelled as it
# was opened, that text (4) and the closing tag. The scanner keeps the tags it knows. One
# generic pattern is about twice as fast to search as an alternation of the known names.
_TOKEN: Final = re.compile(  # tag names in ASCII, as every known tag is: a faster class than \w
    r"<(?:/([A-Za-z_][A-Za-z0-9_.-]*)(?:\s[^<>]*?)?\s*/?>"
    r"|([A-Za-z_][A-Za-z0-9_.-]*)(?:\s[^<>]*?)?\s*(?:(/)>|>(?:([^<]*)</\2>)?))"
)


_OPEN: Final = re.compile(r"<([A-Za-z_][\w.-]*)(?:\s[^<>]*?)?>")
_SHUT: Final = re.compile(r"</([A-Za-z_][\w.-]*)\s*>")


def simple_children(text: str) -> dict[str, str] | None:
    """``<name>value</name>`` pairs of a flat element body (``<Args>``), or None if none.

    Each opening tag pairs with the first closing tag of its name after it (any text
    between); a pair's text is skipped. Every closing tag is found once, up front, so a
    body of many unclosed tags is read in one pass, not searched to its end per tag."""
    closes: dict[str, list[tuple[int, int]]] = {}
    for shut in _SHUT.finditer(text):
        closes.setdefault(shut.group(1), []).append(shut.span())
    if not closes:
        return None
    next_close: dict[str, int] = {}  # per name: the first of its closing tags not yet passed
    pairs: dict[str, str] = {}
    position = 0
    for opening in _OPEN.finditer(text):
        if opening.start() < position:  # inside the text of a pair
            continue
        name = opening.group(1)
        found = closes.get(name)
        if found is None:
            continue
        end = opening.end()
        i = next_close.get(name, 0)
        while i < len(found) and found[i][0] < end:
            i += 1
        next_close[name] = i
        if i < len(found):
            start, position = found[i]
            pairs[name] = unescape(text[end:start]).strip()
    return pairs or None
