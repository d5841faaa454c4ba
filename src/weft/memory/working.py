"""Working-memory entries: what long-term memory hands a turn, one line each.

Two kinds of entry are stored in long-term memory and loaded into a turn's
``working_memory`` (the *loaded* lifecycle: re-fetched each turn, never reduced):

- ``SemanticWorkingMemoryEntry``: a fact as (category, subject, predicate, object) with
  the user's words that support it, rendered
  ``[relationship] User WORRIES_ABOUT work — "my boss is terrible"``;
- ``EpisodicWorkingMemoryEntry``: what an earlier session was about, rendered
  ``Last session (grief): talked about loss after my dog died.`` (a catch-up session
  reads ``Catch-up session (...)``; the approach fields steer the next reply and are
  not rendered).

Entries stay structured in the store and are formatted only where a prompt or a screen
needs text (``format_working_memory_entries``). Legacy plain strings from older
checkpoints pass through unchanged, and dicts of either shape (as other runtimes
store them) are read as entries.

>>> entry = SemanticWorkingMemoryEntry(category="relationship", subject="User",
...     predicate="WORRIES_ABOUT", object="work", evidence_quote="my boss is terrible")
>>> print(format_working_memory_entries([entry, "a legacy line"]))
[relationship] User WORRIES_ABOUT work — "my boss is terrible"
a legacy line
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, TypeAlias

from weft.store import register_type


@dataclass(frozen=True, slots=True, kw_only=True)
class SemanticWorkingMemoryEntry:
    """A fact about the user, with the quote it was learnt from."""

    category: str
    subject: str
    predicate: str
    object: str
    evidence_quote: str = ""

    def render(self) -> str:
        """``[category] subject PREDICATE object — "evidence"`` (no dash without a quote)."""
        line = f"[{self.category}] {self.subject} {self.predicate} {self.object}"
        return f'{line} — "{self.evidence_quote}"' if self.evidence_quote else line


@dataclass(frozen=True, slots=True, kw_only=True)
class EpisodicWorkingMemoryEntry:
    """What an earlier session was about.

    ``primary_themes`` is a list (not a tuple) because stored values are JSON, where a
    tuple has no spelling of its own."""

    summary: str
    primary_themes: list[str] = field(default_factory=list)
    is_catch_up: bool = False
    approach_used: str | None = None
    approach_context: str | None = None

    def render(self) -> str:
        """``Last session (themes): summary`` (``Catch-up session`` for a catch-up)."""
        label = "Catch-up session" if self.is_catch_up else "Last session"
        themes = ", ".join(self.primary_themes)
        head = f"{label} ({themes})" if themes else label
        return f"{head}: {self.summary}"


WorkingMemoryEntry: TypeAlias = SemanticWorkingMemoryEntry | EpisodicWorkingMemoryEntry

register_type(SemanticWorkingMemoryEntry, name="weft.SemanticWorkingMemoryEntry")
register_type(EpisodicWorkingMemoryEntry, name="weft.EpisodicWorkingMemoryEntry")

_SEMANTIC_FIELDS = frozenset(f.name for f in fields(SemanticWorkingMemoryEntry))
_EPISODIC_FIELDS = frozenset(f.name for f in fields(EpisodicWorkingMemoryEntry))


def working_memory_entry(data: Mapping[str, Any]) -> WorkingMemoryEntry:
    """An entry from a dict of either shape (``predicate`` makes it semantic, ``summary``
    episodic); unknown keys are ignored, a dict of neither shape is a ``ValueError``."""
    if "predicate" in data:
        return SemanticWorkingMemoryEntry(**{k: data[k] for k in _SEMANTIC_FIELDS if k in data})
    if "summary" in data:
        given = {k: data[k] for k in _EPISODIC_FIELDS if k in data}
        if "primary_themes" in given:
            given["primary_themes"] = [str(t) for t in given["primary_themes"]]
        return EpisodicWorkingMemoryEntry(**given)
    raise ValueError(
        f"a working-memory dict needs 'predicate' (semantic) or 'summary' (episodic); got "
        f"the keys {sorted(data)}"
    )


def format_working_memory_entry(entry: WorkingMemoryEntry | Mapping[str, Any] | str) -> str:
    """One entry as its one line; a string passes through unchanged."""
    if isinstance(entry, str):
        return entry
    if isinstance(entry, Mapping):
        entry = working_memory_entry(entry)
    return entry.render()


def format_working_memory_entries(
    entries: Iterable[WorkingMemoryEntry | Mapping[str, Any] | str],
) -> str:
    """Entries as lines, in the order given (what a prompt builder puts in the prompt)."""
    return "\n".join(format_working_memory_entry(entry) for entry in entries)
