"""The reference grammar: ``†kind.path`` (or ``$ref:kind.path``), parsed into data.

Grammar (``†`` may always be written ``$ref:``, the ASCII spelling)::

    reference  := SIGIL kind [field step*]
    field      := "." name | quoted
    step       := "." name | "[" index "]" | quoted
    quoted     := '["' chars '"]' | "['" chars "']"    (\\" \\' and \\\\ escape)
    index      := "-"? digit{1,18}                       (negative counts from the end)
    name       := one or more letters, digits, "_" or "-"
    expression := conj ("||" conj)*                     (whitespace allowed around operators)
    conj       := reference ("&&" reference)*

The first step is the store field (``†state.user.id`` reads the entry ``state:user``);
no field reads the whole kind as a ``{field: value}`` dict. ``††`` and ``$$ref:`` are
literal sigils. Inside longer text a reference ends at the first character that cannot
continue it (``"Hi †state.user.name."`` keeps the final dot), and ``||``/``&&`` are plain
text there. The README's "References, output paths and plans" teaches the rest.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, TypeAlias, TypeVar

from weft.errors import ReferenceSyntaxError
from weft.store import KINDS

SIGIL: Final = "†"
ASCII_SIGIL: Final = "$ref:"
MAX_INDEX_DIGITS: Final = 18

Step: TypeAlias = str | int
"""One step inside a value: a key (``str``) or a list index (``int``)."""

_KIND_SET: Final = frozenset(KINDS)
_NAME: Final = re.compile(r"[\w-]+")
_NAME_CHAR: Final = re.compile(r"[\w-]")
_INDEX: Final = re.compile(r"\[(-?\d+)\]")
_PLAIN_NAME: Final = re.compile(r"[\w-]+\Z")
_ESCAPES: Final = {"\\": "\\", '"': '"', "'": "'"}
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Reference:
    """One ``†kind.field.path`` reference: the store entry ``kind:field`` and the steps
    inside its value. ``field`` is ``None`` for the whole kind.

    >>> ref = Reference.parse("†state.currentUser.id")
    >>> ref.kind, ref.field, ref.path
    ('state', 'currentUser', ('id',))
    >>> str(Reference.parse('$ref:state["run.phase"].items[-1]'))
    '†state["run.phase"].items[-1]'
    """

    kind: str
    field: str | None = None
    path: tuple[Step, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Reference:
        """Exactly one reference (surrounding whitespace allowed), or ReferenceSyntaxError."""
        need_str(text, "a reference")
        scanner = _Scanner(text)
        scanner.skip_space()
        ref = scanner.reference(strict=True)
        scanner.skip_space()
        if not scanner.at_end():
            raise scanner.error("unexpected text after the reference; one reference only")
        return ref

    @property
    def steps(self) -> tuple[Step, ...]:
        """The field and the path, as one tuple of steps."""
        return self.path if self.field is None else (self.field, *self.path)

    @property
    def text(self) -> str:
        """The canonical text (dagger spelling, quoted where a name is not plain)."""
        return SIGIL + self.kind + format_steps(self.steps)

    def prefix(self, depth: int) -> Reference:
        """The reference cut to its first ``depth`` steps (0: the whole kind)."""
        steps = self.steps[:depth]
        return Reference(self.kind, str(steps[0]), steps[1:]) if steps else Reference(self.kind)

    def overlaps(self, other: Reference) -> bool:
        """Whether one names a part of the other (same kind, one path a prefix of the
        other). Two indices may be the same item (``[-1]`` and ``[2]``), so they overlap."""
        if self.kind != other.kind:
            return False
        for a, b in zip(self.steps, other.steps, strict=False):
            if type(a) is int and type(b) is int:
                continue
            if a != b:
                return False
        return True

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class Expression:
    """References joined by ``||`` (fallback: the first group that resolves) and ``&&``
    (every reference must resolve; the value is the list of their values)."""

    alternatives: tuple[tuple[Reference, ...], ...]

    @classmethod
    def parse(cls, text: str) -> Expression:
        """A whole-value expression, or ReferenceSyntaxError."""
        need_str(text, "a reference expression")
        groups = _Scanner(text).alternatives(lambda scanner: scanner.reference(strict=True))
        return cls(tuple(tuple(group) for group in groups))

    @property
    def references(self) -> tuple[Reference, ...]:
        return tuple(ref for group in self.alternatives for ref in group)

    @property
    def text(self) -> str:
        return " || ".join(" && ".join(r.text for r in group) for group in self.alternatives)

    def __str__(self) -> str:
        return self.text


Part: TypeAlias = str | Reference
"""A piece of a string with embedded references: literal text or a reference."""


def has_sigil(text: str) -> bool:
    """Whether ``text`` may hold a reference (or an escaped sigil) at all: the fast path."""
    return SIGIL in text or ASCII_SIGIL in text


def parse_value_string(text: str) -> Expression | tuple[Part, ...] | str:
    """What a string argument means: a whole-value ``Expression``, a template of parts,
    or (no references, escapes undone) a plain string. Results are immutable and cached
    (plans repeat their references)."""
    if not has_sigil(text):
        return text
    return _parse_value_string(text)


@functools.lru_cache(maxsize=4096)
def _parse_value_string(text: str) -> Expression | tuple[Part, ...] | str:
    stripped = text.strip()
    if stripped.startswith((SIGIL, ASCII_SIGIL)) and not stripped.startswith(
        (SIGIL + SIGIL, "$" + ASCII_SIGIL)
    ):
        try:
            return Expression.parse(stripped)
        except ReferenceSyntaxError:
            pass  # not an expression: read it as text with references inside
    parts = parse_template(text)
    if len(parts) == 1 and isinstance(parts[0], str):
        return parts[0]
    return parts


def parse_template(text: str) -> tuple[Part, ...]:
    """Text with embedded references, as literal parts and references (adjacent literal
    text joined, escapes undone). A sigil that starts no reference is an error."""
    need_str(text, "a template")
    scanner = _Scanner(text)
    parts: list[Part] = []
    literal: list[str] = []
    while not scanner.at_end():
        chunk = scanner.literal_until_sigil()
        if chunk:
            literal.append(chunk)
        if scanner.at_end():
            break
        escaped = scanner.escaped_sigil()
        if escaped is not None:
            literal.append(escaped)
            continue
        if literal:
            parts.append("".join(literal))
            literal = []
        parts.append(scanner.reference(strict=False))
    if literal:
        parts.append("".join(literal))
    return tuple(parts)


def format_steps(steps: tuple[Step, ...]) -> str:
    """``.name``, ``[index]`` and ``["quoted key"]`` text of some steps."""
    out = []
    for step in steps:
        if type(step) is int:
            out.append(f"[{step}]")
        elif _PLAIN_NAME.match(str(step)):
            out.append(f".{step}")
        else:
            quoted = str(step).replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'["{quoted}"]')
    return "".join(out)


def need_str(text: object, what: str, example: str = "'†state.user.id'") -> None:
    """``ReferenceSyntaxError`` unless ``text`` is a string."""
    if not isinstance(text, str):
        raise ReferenceSyntaxError(
            f"{what} is a string such as {example}, not a {type(text).__name__} ({text!r:.80})",
            text=repr(text),
        )


class _Scanner:
    """A cursor over the text, with the grammar's productions as methods."""

    __slots__ = ("pos", "text")

    def __init__(self, text: str, pos: int = 0) -> None:
        self.text = text
        self.pos = pos

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def error(
        self, problem: str, at: int | None = None, *, sigil_hint: bool = False
    ) -> ReferenceSyntaxError:
        """The error at ``at`` (default: the cursor). ``sigil_hint`` adds how references
        look and how a literal sigil is escaped (for a sigil that starts nothing)."""
        where = self.pos if at is None else at
        shown = self.text if len(self.text) <= 120 else self.text[:117] + "..."
        hint = (
            ". A reference looks like '†state.user.id' or '$ref:state.items[0]'; a literal "
            "dagger is written '††' (and a literal '$ref:' as '$$ref:')"
            if sigil_hint
            else ""
        )
        return ReferenceSyntaxError(
            f"{shown!r} at character {where}: {problem}{hint}",
            text=self.text,
            position=where,
        )

    def sigil(self) -> bool:
        """Consume a sigil at the cursor; whether there was one."""
        for sigil in (SIGIL, ASCII_SIGIL):
            if self.text.startswith(sigil, self.pos):
                self.pos += len(sigil)
                return True
        return False

    def escaped_sigil(self) -> str | None:
        """Consume ``††`` or ``$$ref:`` and return the literal it stands for."""
        for escape, sigil in ((SIGIL + SIGIL, SIGIL), ("$" + ASCII_SIGIL, ASCII_SIGIL)):
            if self.text.startswith(escape, self.pos):
                self.pos += len(escape)
                return sigil
        return None

    def literal_until_sigil(self) -> str:
        """Text up to the next ``†``, ``$$ref:`` or ``$ref:`` (not consumed)."""
        text, start = self.text, self.pos
        candidates = [i for i in (text.find(SIGIL, start), text.find("$ref:", start)) if i >= 0]
        end = min(candidates) if candidates else len(text)
        if end > start and text.startswith("$" + ASCII_SIGIL, end - 1):
            end -= 1  # the escape $$ref: begins one character earlier
        self.pos = end
        return text[start:end]

    def name(self) -> str | None:
        match = _NAME.match(self.text, self.pos)
        if match is None:
            return None
        self.pos = match.end()
        return match.group()

    def kind(self) -> str:
        start = self.pos
        kind = self.name()
        if kind is None:
            raise self.error(f"a kind must follow the sigil ({', '.join(KINDS)})", sigil_hint=True)
        if kind not in _KIND_SET:
            raise self.error(
                f"unknown kind {kind!r}; the kinds are {', '.join(KINDS)}", start, sigil_hint=True
            )
        return kind

    def reference(self, *, strict: bool, bare: bool = False) -> Reference:
        """A reference at the cursor. ``strict``: every ``.`` and ``[`` must continue it
        (whole values); otherwise it ends where it cannot go on (text). ``bare``: no
        sigil, the kind is ``state`` and the first name is the field (output paths)."""
        start = self.pos
        if bare:
            kind = "state"
        else:
            if not self.sigil():
                raise self.error(
                    "expected a reference starting with '†' or '$ref:'", sigil_hint=True
                )
            kind = self.kind()
        steps = self.steps(strict=strict, bare=bare)
        if steps and type(steps[0]) is int:
            raise self.error(
                f"the first step after the kind names a field, not an index; "
                f"write †{kind}.name[{steps[0]}]",
                start,
            )
        return Reference(kind, str(steps[0]), tuple(steps[1:])) if steps else Reference(kind)

    def steps(self, *, strict: bool, bare: bool) -> list[Step]:
        steps: list[Step] = []
        text = self.text
        if bare:
            first = self.name()
            if first is None:
                quoted = self.quoted(strict=True)
                if quoted is None:
                    raise self.error("expected a field name")
                first = quoted
            steps.append(first)
        while self.pos < len(text):
            char = text[self.pos]
            if char == ".":
                if self.pos + 1 < len(text) and _NAME_CHAR.match(text, self.pos + 1):
                    self.pos += 1
                    steps.append(self.name() or "")
                    continue
                if strict:
                    raise self.error("a '.' must be followed by a name (letters, digits, _ or -)")
                break
            if char == "[":
                step = self.bracket(strict=strict)
                if step is None:
                    break
                steps.append(step)
                continue
            break
        return steps

    def bracket(self, *, strict: bool) -> Step | None:
        start = self.pos
        match = _INDEX.match(self.text, self.pos)
        if match is not None:
            digits = match.group(1).lstrip("-")
            if len(digits) > MAX_INDEX_DIGITS:
                raise self.error(f"an index has at most {MAX_INDEX_DIGITS} digits")
            self.pos = match.end()
            return int(match.group(1))
        quoted = self.quoted(strict=strict)
        if quoted is not None:
            return quoted
        if strict:
            raise self.error(
                "'[' starts an index such as [0] or [-1], or a quoted key such as [\"run.phase\"]",
                start,
            )
        self.pos = start
        return None

    def quoted(self, *, strict: bool) -> str | None:
        """A ``["key"]`` or ``['key']`` step at the cursor, or None (cursor unchanged)."""
        text, start = self.text, self.pos
        if not text.startswith(('["', "['"), start):
            return None
        quote = text[start + 1]
        i = start + 2
        out: list[str] = []
        problem, at = "a quoted key is not closed (expected its quote and ']')", start
        while i < len(text):
            char = text[i]
            if char == "\\":
                escaped = _ESCAPES.get(text[i + 1]) if i + 1 < len(text) else None
                if escaped is None:
                    problem, at = "in a quoted key only \\\\, \\\" and \\' are escapes", i
                    break
                out.append(escaped)
                i += 2
            elif char != quote:
                out.append(char)
                i += 1
            elif text.startswith("]", i + 1):
                self.pos = i + 2
                return "".join(out)
            else:
                problem, at = "a quoted key ends with its quote and ']'", i + 1
                break
        if not strict:
            return None
        raise self.error(problem, at)

    def alternatives(self, item: Callable[[_Scanner], T]) -> list[list[T]]:
        """``item ("&&" item)* ("||" ...)*`` to the end of the text: the groups in order."""
        groups: list[list[T]] = [[]]
        while True:
            self.skip_space()
            if self.at_end():
                what = "after an operator" if groups != [[]] else "here"
                raise self.error(f"expected a path {what}")
            self.no_parenthesis()
            groups[-1].append(item(self))
            self.skip_space()
            if self.at_end():
                return groups
            if self.text.startswith("&&", self.pos):
                self.pos += 2
            elif self.text.startswith("||", self.pos):
                self.pos += 2
                groups.append([])
            else:
                self.no_parenthesis()
                raise self.error("expected '&&', '||' or the end of the expression")

    def no_parenthesis(self) -> None:
        if self.text[self.pos] in "()":
            raise self.error(
                "parentheses are not part of the grammar; '&&' binds tighter than '||', "
                "so write every alternative out: '†a && †b || †c'"
            )
