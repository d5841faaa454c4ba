"""AgentMemory: the namespaced memory of agents and executors, as a view over one ``Store``.

A memory key *is* a store key: ``step:research`` is the store entry of kind
``step`` at path ``research``. Memory covers four store kinds (``task``,
``step``, ``input``, ``shared``) and never sees ``state``, so an executor that
writes through the store and an agent that writes through memory meet in
the same place, and a memory subscriber hears both.
"""

from __future__ import annotations

import base64
import builtins
import dataclasses
import enum
import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from operator import attrgetter
from typing import Any, Final, Literal

from weft.errors import MemoryKeyError, ValueTypeError
from weft.store import Entry, Event, Store
from weft.store.records import RECORDS

logger: Final = logging.getLogger("weft.memory")

MemoryKind = Literal["task_result", "step_result", "input", "shared"]
MemoryOp = Literal["set", "delete", "clear"]

STORE_KIND_OF: Final[Mapping[str, str]] = {
    "task_result": "task",
    "step_result": "step",
    "input": "input",
    "shared": "shared",
}
"""Memory kind -> the store kind (the key's namespace) that holds it."""

MEMORY_KIND_OF: Final[Mapping[str, MemoryKind]] = {
    "task": "task_result",
    "step": "step_result",
    "input": "input",
    "shared": "shared",
}
"""Store kind -> memory kind; ``state`` is deliberately absent."""

MEMORY_KINDS: Final[tuple[MemoryKind, ...]] = ("task_result", "step_result", "input", "shared")
NAMESPACES: Final[tuple[str, ...]] = ("task", "step", "input", "shared")


def parse_key(key: str) -> tuple[str, str]:
    """Split a memory key into ``(store kind, path)``, or raise ``MemoryKeyError``."""
    if not isinstance(key, str):
        raise MemoryKeyError(
            f"memory key {key!r} is a {type(key).__name__}, expected a string such as "
            "'step:research'; build keys with weft.memory.memory_keys"
        )
    namespace, colon, path = key.partition(":")
    if not colon or namespace not in MEMORY_KIND_OF or not path:
        if namespace in MEMORY_KIND_OF:
            problem = "has an empty id after the namespace"
        elif namespace == "state" and colon:
            problem = "is a state key, and state is not part of AgentMemory (use the Store)"
        else:
            problem = "has no memory namespace"
        raise MemoryKeyError(
            f"memory key {key!r} {problem}; memory keys look like "
            f"{', '.join(f'{ns}:<id>' for ns in NAMESPACES)}. "
            "Build them with weft.memory.memory_keys (memory_keys.step('research'))"
        )
    return namespace, path


def _check_kinds(kind: str | Iterable[str] | None) -> frozenset[str]:
    """The store kinds a ``kind`` filter names (None: every memory kind)."""
    if kind is None:
        return frozenset(NAMESPACES)
    names = [kind] if isinstance(kind, str) else builtins.list(kind)
    for name in names:
        if name not in STORE_KIND_OF:
            hint = (
                f" ({name!r} is a key namespace; its memory kind is {MEMORY_KIND_OF[name]!r})"
                if name in MEMORY_KIND_OF
                else ""
            )
            raise MemoryKeyError(
                f"unknown memory kind {name!r}{hint}; the memory kinds are "
                f"{', '.join(MEMORY_KINDS)}"
            )
    return frozenset(STORE_KIND_OF[name] for name in names)


def _scan_prefixes(store_kinds: Iterable[str], key_prefix: str) -> list[tuple[str, str]]:
    """``(store kind, index prefix)`` pairs that cover ``key_prefix`` within those kinds.

    A prefix shorter than a namespace (``"s"``) covers whole namespaces; a longer
    one (``"step:re"``) narrows one. Either way the store's ordered index is
    walked only over matching memory keys, never over ``state``.
    """
    return [
        (kind, namespace if namespace.startswith(key_prefix) else key_prefix)
        for kind in NAMESPACES
        if kind in store_kinds
        for namespace in [f"{kind}:"]
        if namespace.startswith(key_prefix) or key_prefix.startswith(namespace)
    ]


def _utc(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=UTC)


_CREATED: Final = "created_at"
"""The meta field of an entry whose ``created_at`` was given (``set``, ``restore``): epoch
seconds. It travels with the write's event, so a replayed or persisted store keeps it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryEntry:
    """One memory entry: a store entry seen through memory (kind names, UTC datetimes)."""

    key: str
    kind: MemoryKind
    value: Any
    source: str | None
    title: str | None
    description: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_store(cls, entry: Entry) -> MemoryEntry:
        """Build from a store ``Entry`` of a memory kind (title/description come from meta)."""
        meta = entry.meta or {}
        title = meta.get("title")
        description = meta.get("description")
        created = meta.get(_CREATED)
        return cls(
            key=entry.key,
            kind=MEMORY_KIND_OF[entry.kind],
            value=entry.value,
            source=entry.source,
            title=title if isinstance(title, str) else None,
            description=description if isinstance(description, str) else None,
            created_at=_utc(created if type(created) is float else entry.created_at),
            updated_at=_utc(entry.updated_at),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryEvent:
    """A change to memory, as subscribers hear it.

    ``key`` is the key set or deleted; for a clear, the prefix cleared (``"step:"``
    for a whole namespace, ``""`` for everything). ``entry`` is the entry after a
    set, else None. ``kind`` is the memory kind, or None for a clear that spans
    several namespaces.
    """

    op: MemoryOp
    key: str
    entry: MemoryEntry | None
    kind: MemoryKind | None
    source: str | None = None


MemorySubscriber = Callable[[MemoryEvent], object]


class _MemoryKeys:
    """Builders of memory keys, so call sites are grep-able and typo-free."""

    __slots__ = ()

    def step(self, id: str) -> str:
        """``step:<id>``: the result of one step."""
        return _build("step", id)

    def task(self, id: str) -> str:
        """``task:<id>``: the result of one task."""
        return _build("task", id)

    def input(self, key: str) -> str:
        """``input:<key>``: a caller-supplied input."""
        return _build("input", key)

    def shared(self, key: str) -> str:
        """``shared:<key>``: a fact published for other agents."""
        return _build("shared", key)

    def __repr__(self) -> str:
        return "memory_keys"


def _build(namespace: str, id: str) -> str:
    if not isinstance(id, str) or not id:
        raise MemoryKeyError(
            f"memory_keys.{namespace}() needs a non-empty string id, got {id!r}; "
            f"pass the {namespace}'s id, e.g. memory_keys.{namespace}('research')"
        )
    return f"{namespace}:{id}"


memory_keys: Final = _MemoryKeys()
"""``memory_keys.step(id)``, ``.task(id)``, ``.input(key)``, ``.shared(key)``."""


class AgentMemory:
    """The namespaced agent memory, over one ``Store``.

    >>> from weft.memory import AgentMemory, memory_keys
    >>> memory = AgentMemory()
    >>> _ = memory.set(memory_keys.task("research"), {"findings": ["alpha"]}, title="Findings")
    >>> memory.get_value("task:research")
    {'findings': ['alpha']}
    >>> [e.key for e in memory.list(kind="task_result")]
    ['task:research']
    """

    def __init__(self, store: Store | None = None) -> None:
        self._store = store if store is not None else Store()

    @property
    def store(self) -> Store:
        """The store this memory is a view of."""
        return self._store

    def __repr__(self) -> str:
        return f"<AgentMemory over {self._store!r}>"

    def set(
        self,
        key: str,
        value: Any,
        *,
        kind: MemoryKind | None = None,
        source: str | None = None,
        title: str | None = None,
        description: str | None = None,
        created_at: datetime | None = None,
    ) -> MemoryEntry:
        """Write (overwrite) ``key``; ``kind`` may be omitted, it follows from the namespace.

        The value is frozen by the store (a ``ValueTypeError`` naming the key if it
        is not JSON-serialisable). A rewrite keeps ``created_at`` unless one is given
        (a timezone-aware ``datetime``, as ``MemoryEntry.created_at`` is).
        """
        entry = _write(self._store, key, value, kind, source, title, description, created_at)
        return MemoryEntry.from_store(entry)

    def restore(self, entries: Iterable[MemoryEntry]) -> int:
        """Load ``entries`` (a ``snapshot()``, say) into this memory as one commit: each key
        given is overwritten with the entry's value, source, title, description and
        ``created_at``; other keys stay. Subscribers hear a set per entry. Returns how many.

        >>> old = AgentMemory()
        >>> _ = old.set("task:research", ["alpha"], title="Findings")
        >>> live = AgentMemory()
        >>> live.restore(old.snapshot())
        1
        >>> live.get("task:research").created_at == old.get("task:research").created_at
        True
        """
        items = builtins.list(entries)
        for item in items:
            if not isinstance(item, MemoryEntry):
                raise MemoryKeyError(
                    f"restore() takes MemoryEntry items, as snapshot() and list() return "
                    f"them, not a {type(item).__name__} ({item!r:.80}); nothing was restored"
                )
        with self._store.transaction() as tx:
            for e in items:
                _write(tx, e.key, e.value, e.kind, e.source, e.title, e.description, e.created_at)
        return len(items)

    def delete(self, key: str) -> bool:
        """Remove ``key``; returns whether it held anything. Subscribers hear of it."""
        store_kind, path = parse_key(key)
        return self._store.delete(store_kind, path)

    def clear(
        self,
        *,
        kind: MemoryKind | Iterable[MemoryKind] | None = None,
        key_prefix: str | None = None,
    ) -> int:
        """Remove the memory entries of ``kind`` under ``key_prefix`` (all of memory by
        default, never ``state``); returns how many. Subscribers hear one clear per
        namespace touched."""
        scans = _scan_prefixes(_check_kinds(kind), key_prefix or "")
        return sum(
            self._store.clear(kind=k, key_prefix="" if p == f"{k}:" else p) for k, p in scans
        )

    def get(self, key: str) -> MemoryEntry | None:
        """The entry at ``key``, or None."""
        entry = self._store.get(*parse_key(key))
        return None if entry is None else MemoryEntry.from_store(entry)

    def get_value(self, key: str, default: Any = None) -> Any:
        """The (read-only) value at ``key``, or ``default``. ``weft.store.thaw`` copies it."""
        entry = self._store.get(*parse_key(key))
        return default if entry is None else entry.value

    def has(self, key: str) -> bool:
        """Whether ``key`` holds an entry."""
        return self._store.has(*parse_key(key))

    def list(
        self,
        *,
        kind: MemoryKind | Iterable[MemoryKind] | None = None,
        keys: Iterable[str] | None = None,
        key_prefix: str | None = None,
        sources: Iterable[str] | None = None,
    ) -> builtins.list[MemoryEntry]:
        """Entries matching every filter given, oldest write first.

        ``kind`` is one memory kind or several; ``keys`` exact keys; ``key_prefix`` a
        prefix of the key (``"step:"``, ``"task:re"``); ``sources`` the writers.
        """
        found = self._select(kind=kind, keys=keys, key_prefix=key_prefix, sources=sources)
        found.sort(key=attrgetter("seq"))
        return [MemoryEntry.from_store(entry) for entry in found]

    def snapshot(self) -> builtins.list[MemoryEntry]:
        """Every memory entry, oldest write first."""
        return self.list()

    def format_for_prompt(
        self,
        *,
        kind: MemoryKind | Iterable[MemoryKind] | None = None,
        keys: Iterable[str] | None = None,
        key_prefix: str | None = None,
        sources: Iterable[str] | None = None,
    ) -> str:
        """The entries ``list`` selects with the same filters, as Markdown for a prompt, in
        creation order: per entry a heading ``## [kind] title (key)``, its description, and
        its value in a fence (text as it is, anything else as JSON). ``""`` when none match.

        >>> memory = AgentMemory()
        >>> _ = memory.set("task:research", ["alpha"], title="Findings")
        >>> print(memory.format_for_prompt(kind="task_result"))
        # Memory (results of earlier steps and tasks, inputs, shared facts)
        <BLANKLINE>
        ## [task_result] Findings (task:research)
        ```json
        [
          "alpha"
        ]
        ```
        """
        entries = self.list(kind=kind, keys=keys, key_prefix=key_prefix, sources=sources)
        if not entries:
            return ""
        entries.sort(key=attrgetter("created_at"))  # stable: a tie stays in write order
        lines = ["# Memory (results of earlier steps and tasks, inputs, shared facts)"]
        for entry in entries:
            title = " ".join(entry.title.split()) if entry.title else ""
            lines += ["", f"## [{entry.kind}] {f'{title} ({entry.key})' if title else entry.key}"]
            if entry.description:
                lines.append(entry.description)
            if isinstance(entry.value, str):
                body, info = entry.value, ""
            else:
                body = json.dumps(to_plain_json(entry.value), ensure_ascii=False, indent=2)
                info = "json"
            longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
            fence = "`" * max(3, longest + 1)
            lines += [fence + info, body, fence]
        return "\n".join(lines)

    def __len__(self) -> int:
        return len(self._select())

    def _select(
        self,
        *,
        kind: MemoryKind | Iterable[MemoryKind] | str | Iterable[str] | None = None,
        keys: Iterable[str] | None = None,
        key_prefix: str | None = None,
        sources: Iterable[str] | None = None,
    ) -> builtins.list[Entry]:
        """Store entries matching the filters, in no particular order (the tools rank them)."""
        store_kinds = _check_kinds(kind)
        wanted_sources = None if sources is None else frozenset(sources)
        found: builtins.list[Entry] = []
        if keys is not None:
            for key in dict.fromkeys(keys):
                store_kind, path = parse_key(key)
                entry = self._store.get(store_kind, path)
                wanted = store_kind in store_kinds and key.startswith(key_prefix or "")
                if entry is not None and wanted:
                    found.append(entry)
        else:
            for _, prefix in _scan_prefixes(store_kinds, key_prefix or ""):
                found.extend(self._store.entries(key_prefix=prefix))
        if wanted_sources is not None:
            found = [e for e in found if e.source in wanted_sources]
        return [e for e in found if not _a_run_record(e)]

    def subscribe(self, fn: MemorySubscriber) -> Callable[[], None]:
        """Call ``fn(MemoryEvent)`` for every later set, delete and clear of memory
        (written through this view or straight to the store); returns an unsubscribe
        function. A subscriber that raises is logged under its own name and never
        breaks the write or the other subscribers."""
        name = getattr(fn, "__qualname__", None) or repr(fn)
        store = self._store

        def forward(event: Event) -> None:
            memory_event = _translate(store, event)
            if memory_event is None:
                return
            try:
                fn(memory_event)
            except Exception:
                logger.exception(
                    "memory subscriber %s raised on %s %r; the write stands and other "
                    "subscribers still run",
                    name,
                    memory_event.op,
                    memory_event.key,
                )

        forward.__qualname__ = f"AgentMemory.subscribe({name})"
        return store.subscribe(forward)


def _write(
    store: Store,
    key: str,
    value: Any,
    kind: MemoryKind | None,
    source: str | None,
    title: str | None,
    description: str | None,
    created_at: datetime | None,
) -> Entry:
    """``AgentMemory.set`` on ``store`` (the memory's store, or a transaction's fork)."""
    store_kind, path = parse_key(key)
    if kind is not None:
        expected = STORE_KIND_OF.get(kind)
        if expected != store_kind:
            needs = (
                f"kind {kind!r} needs keys under {expected}:"
                if expected is not None
                else f"{kind!r} is not a memory kind ({', '.join(MEMORY_KINDS)})"
            )
            raise MemoryKeyError(
                f"memory key {key!r} is in the {store_kind}: namespace, whose kind is "
                f"{MEMORY_KIND_OF[store_kind]!r}, but kind={kind!r} was given; {needs}. "
                "Omit kind to take it from the key, or build the key with memory_keys"
            )
    meta: dict[str, Any] = {"title": title, "description": description}
    if created_at is None:  # a rewrite keeps a created_at that was given before
        old = store.get(store_kind, path)
        if old is not None and old.meta and type(old.meta.get(_CREATED)) is float:
            meta[_CREATED] = old.meta[_CREATED]
    elif isinstance(created_at, datetime) and created_at.utcoffset() is not None:
        meta[_CREATED] = created_at.timestamp()
    else:
        raise ValueTypeError(
            f"created_at={created_at!r} for memory key {key!r}: expected a timezone-aware "
            "datetime, as MemoryEntry.created_at is (e.g. datetime.now(UTC)); nothing was "
            "written"
        )
    return store.write(store_kind, path, value, source=source, meta=meta, replace=True)


def to_plain_json(value: Any) -> Any:
    """A stored value as plain JSON for a model: models dumped, datetimes as ISO text,
    bytes as base64; never the codec's tagged form."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(key): to_plain_json(item) for key, item in value.items()}
    if isinstance(value, builtins.list | tuple):
        return [to_plain_json(item) for item in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, enum.Enum):
        return to_plain_json(value.value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return str(value)


_OPS: Final[Mapping[str, MemoryOp]] = {"write": "set", "delete": "delete", "clear": "clear"}


def _translate(store: Store, event: Event) -> MemoryEvent | None:
    """The memory view of a store event, or None when it does not touch memory."""
    op = _OPS.get(event.op)
    if op == "clear" and not event.kind:  # a prefix over every kind
        touched = _scan_prefixes(NAMESPACES, event.path)
        if not touched:
            return None
        only = MEMORY_KIND_OF[touched[0][0]] if len(touched) == 1 else None
        return MemoryEvent(op=op, key=event.path, entry=None, kind=only, source=event.source)
    kind = MEMORY_KIND_OF.get(event.kind)
    if op is None or kind is None:
        return None
    stored = store.get(event.kind, event.path) if op == "set" else None
    entry = None if stored is None else MemoryEntry.from_store(stored)
    key = (event.path or f"{event.kind}:") if op == "clear" else event.key
    return MemoryEvent(op=op, key=key, entry=entry, kind=kind, source=event.source)


def _a_run_record(entry: Entry) -> bool:
    """Whether ``entry`` is a run's record (``weft.store.records``, kept in kind ``step``
    beside the steps' results): the engine's bookkeeping, never listed as memory."""
    return entry.kind == "step" and isinstance(entry.value, RECORDS)
