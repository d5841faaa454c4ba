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
    """A known container found in the reply (``tag``: its canonical spelling): the
    containers directly inside (``children``, in order), and ``fields``, the verbatim inner
    text of the first of each text tag directly inside (entities not yet decoded; an alias
    kept under the name it stands for)."""

    __slots__ = ("children", "fields", "tag")

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.children: list[Element] = []
        self.fields: dict[str, str] = {}

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
        raw = self.fields.get(tag)
        return None if raw is None else unescape(raw).strip()


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
        spellings = {name.lower(): kind for name, kind in kinds.items()} | kinds
        self._known: dict[str, _Kind] = {}
        for spelling, (tag, field) in spellings.items():
            self._known[spelling] = (tag, field, f"/{spelling}>", False)
            self._known[f"/{spelling}"] = (tag, field, f"/{spelling}", True)

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
        unclosed: set[str] = set()  # closings not found as written: never searched again
        root = node = Element("")
        stack = [root]
        # Every tag starts at a '<': the reply split at each '<' is one piece per tag it may
        # hold, the piece's head (up to its first '>') the tag, the rest text between tags.
        # A head spelled as the prompt spells the tag is known by one dict lookup.
        pieces = text.split("<")
        count = len(pieces)
        i = 1
        while i < count:
            head, gt, rest = pieces[i].partition(">")
            i += 1
            if not gt:  # no '>' before the next '<': not a tag
                continue
            kind = known.get(head)
            self_closing = False
            if kind is None:  # another case, attributes, space, or not a known tag
                kind, self_closing = _head_kind(known, head)
                if kind is None:
                    continue
            tag, field, shut, closes = kind
            if closes:
                if field is not None:
                    raise ResponseProblem(f"<{shut}> closes a <{tag}> that was never opened")
                if node.tag != tag:
                    if not any(e.tag == tag for e in stack[1:]):
                        raise ResponseProblem(f"<{shut}> closes a <{tag}> that was never opened")
                    raise ResponseProblem(f"<{node.tag}> is not closed before </{tag}>")
                stack.pop()
                node = stack[-1]
                continue
            # closed at once: its text holds no '<' and the next piece is its closing tag,
            # spelled as it was opened
            closed = not self_closing and i < count and pieces[i].startswith(shut)
            if field is None:  # a container
                element = _new(Element)  # Element(tag), without a Python call
                element.tag = tag
                element.children = []
                element.fields = {}
                node.children.append(element)
                if closed:
                    i += 1
                elif not self_closing:
                    stack.append(element)
                    node = element
                continue
            if self_closing:
                inner = ""
            elif closed:
                inner = rest
                i += 1
            else:  # its text holds a '<', or its closing tag is spelled otherwise
                j = -1 if shut in unclosed else _first(pieces, i, shut)
                if j < 0:
                    unclosed.add(shut)
                    j = _first_in_any_case(pieces, i, tag)
                inner = "<".join((rest, *pieces[i:j]))  # the tags inside it are text
                i = j + 1
            if field not in node.fields:
                node.fields[field] = inner
        if len(stack) > 1:
            raise ResponseProblem(f"<{node.tag}> is opened but never closed; add </{node.tag}>")
        return root


_new: Final = object.__new__
_Kind = tuple[str, str | None, str, bool]
"""How the scanner knows a head: its tag, the field it fills (None: a container), and for an
opening tag the rest of its closing tag as written ("/Name>"), for a closing one
its name as written ("/Name"); and whether it is a closing tag."""


def _head_kind(known: Mapping[str, _Kind], head: str) -> tuple[_Kind | None, bool]:
    """The kind of a tag's head not spelled as a known tag is (None: not a known tag), and
    whether it closes itself: the head read by its syntax, its name in any case."""
    found = _HEAD.fullmatch(head)
    if found is None:
        return None, False
    slash, name, closes_itself = found.groups()
    kind = known.get(name) or known.get(name.lower())
    if kind is None:
        return None, False
    tag, field, _, _ = kind
    if slash:
        return (tag, field, f"/{name}", True), False
    return (tag, field, f"/{name}>", False), closes_itself is not None


def _first(pieces: list[str], i: int, shut: str) -> int:
    """The first of ``pieces[i:]`` that is the closing tag ``<`` + ``shut``, or -1."""
    return next((j for j in range(i, len(pieces)) if pieces[j].startswith(shut)), -1)


def _first_in_any_case(pieces: list[str], i: int, tag: str) -> int:
    """The first of ``pieces[i:]`` that closes the text tag ``tag``, in any case and with space
    before its ``>``; a ``ResponseProblem`` if none does."""
    want = tag.lower()
    for j in range(i, len(pieces)):
        piece = pieces[j]
        if piece[:1] != "/":
            continue
        head, gt, _ = piece.partition(">")
        if not gt:
            continue
        lowered = head.lower() if head.isascii() else head.translate(_ASCII_LOWER)
        found = _CLOSE_HEAD.fullmatch(lowered)
        if found is not None and found.group(1) == want:
            return j
    raise ResponseProblem(f"<{tag}> is opened but never closed; add </{tag}>")


_ASCII_LOWER: Final = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
# The head of a piece (the text between a '<' and the first '>') that is a tag: "/" if it
# is a closing one, its name, and "/" if it closes itself; attributes skipped. Tag names are
# ASCII, as every known tag is. A closing tag of a text tag is also found lower-cased.
_HEAD: Final = re.compile(r"(/)?([A-Za-z_][A-Za-z0-9_.-]*)(?:\s[^<>]*?)?\s*(/)?")
_CLOSE_HEAD: Final = re.compile(r"/([a-z][\w.-]*)\s*")


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
