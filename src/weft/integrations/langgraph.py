"""A LangGraph store over weft's long-term memory (``pip install 'weft[integrations]'``).

``WeftStore(memory)`` is a LangGraph ``BaseStore`` over one owner's ``LongTermMemory``, on any
of its backends; docs/integrations.md says in full how the two meet. In short: every operation
runs as the memory's owner, filtered in the backend's own query (a store over Alice's memory
cannot reach Bob's entries); a namespace's labels joined by ``.`` are weft's namespace (one to
one, since LangGraph refuses ``.`` inside a label); a value is a dict (an entry weft wrote that
is not one reads back as ``{"value": <its JSON>}``); a search ``query`` runs weft's recall and
an item's ``score`` is the recall score; ``ttl`` is in minutes, and reads do not extend it.

Operations run on the calling thread (``batch``) or on a worker thread (``abatch``), since
weft's backends are blocking.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any, Final

from weft.errors import IntegrationError
from weft.integrations._tools import not_installed
from weft.memory import LongTermMemory, MemoryRecord
from weft.memory.agent_memory import to_plain_json
from weft.store import thaw

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as error:
    raise not_installed("LangGraph", "langgraph", error) from error

SEPARATOR: Final = "."
"""What joins a LangGraph namespace's labels into weft's namespace."""

_OPERATORS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


class WeftStore(BaseStore):
    """A LangGraph ``BaseStore`` over one owner's ``LongTermMemory`` (see the module
    docstring).

    >>> from weft.memory import InMemoryMemoryBackend, LongTermMemory, Owner
    >>> store = WeftStore(LongTermMemory(InMemoryMemoryBackend(), owner=Owner(user_id="ada")))
    >>> store.put(("prefs",), "tone", {"style": "brief"})
    >>> store.get(("prefs",), "tone").value, store.memory.get_value("prefs", "tone")
    ({'style': 'brief'}, {'style': 'brief'})
    """

    supports_ttl: bool = True

    def __init__(self, memory: LongTermMemory) -> None:
        if not isinstance(memory, LongTermMemory):
            raise IntegrationError(
                f"WeftStore(memory={memory!r:.80}): expected a weft.memory.LongTermMemory, "
                "e.g. LongTermMemory(SQLiteMemoryBackend(path), owner=Owner(user_id=...))"
            )
        self.memory = memory

    def __repr__(self) -> str:
        return f"<WeftStore owner={self.memory.owner!r}>"

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; one result each (``None`` for a put). Every op is checked
        before the first runs, so a malformed op refuses the batch with nothing written."""
        return [run() for run in [self._prepare(op) for op in ops]]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a worker thread (the backends block)."""
        return await asyncio.to_thread(self.batch, list(ops))

    def _prepare(self, op: Op) -> Callable[[], Result]:
        if isinstance(op, GetOp):
            return partial(self._get, weft_namespace(op.namespace), _key(op.key))
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise IntegrationError(
            f"WeftStore cannot run {op!r:.80}: a LangGraph store runs GetOp, PutOp, SearchOp "
            "and ListNamespacesOp"
        )

    def _get(self, namespace: str, key: str) -> Item | None:
        record = self.memory.get(namespace, key)
        return None if record is None else Item(**_fields(record))

    def _put(self, op: PutOp) -> Callable[[], None]:
        namespace, key = weft_namespace(op.namespace), _key(op.key)
        if op.value is None:
            return partial(self._delete, namespace, key)
        if not isinstance(op.value, Mapping):
            raise IntegrationError(
                f"put({op.namespace!r}, {op.key!r}): the value is a "
                f"{type(op.value).__name__}; a LangGraph store keeps dicts, e.g. "
                "{'text': ...}, and None deletes the item"
            )
        ttl = op.ttl
        if ttl is not None and not (
            isinstance(ttl, int | float)
            and not isinstance(ttl, bool)
            and math.isfinite(ttl)
            and ttl > 0
        ):
            raise IntegrationError(
                f"put({op.namespace!r}, {op.key!r}, ttl={ttl!r}): a ttl is a positive number "
                "of minutes, or None"
            )
        value, text = dict(op.value), _index_text(op.value, op.index)
        seconds = None if ttl is None else float(ttl) * 60.0

        def put() -> None:
            self.memory.put(namespace, key, value, text=text, ttl=seconds)

        return put

    def _delete(self, namespace: str, key: str) -> None:
        self.memory.delete(namespace, key)

    def _search(self, op: SearchOp) -> Callable[[], list[SearchItem]]:
        prefix = _labels(op.namespace_prefix, allow_empty=True)
        limit, offset = _count(op.limit, "limit"), _count(op.offset, "offset")
        check = _matcher(op.filter)
        query = op.query
        if query is not None and not isinstance(query, str):
            raise IntegrationError(f"query={query!r:.80}: a search query is text")
        return partial(self._found, prefix, query, check, offset, limit)

    def _found(
        self,
        prefix: tuple[str, ...],
        query: str | None,
        check: Callable[[MemoryRecord], bool],
        offset: int,
        limit: int,
    ) -> list[SearchItem]:
        wanted = offset + limit
        if query is None or not query.strip():
            found = [r for r in self.memory.list() if _under(r.namespace, prefix) and check(r)]
            return [_search_item(r, None) for r in found[offset:wanted]]
        if limit == 0:
            return []
        # recall over every namespace, keeping the hits under the prefix: finding the
        # namespaces under it first would read every entry of the owner
        k = max(wanted, 1)
        while True:
            hits = self.memory.recall(query, k=k).hits
            kept = [
                (hit.record, hit.score)
                for hit in hits
                if _under(hit.record.namespace, prefix) and check(hit.record)
            ]
            if len(kept) >= wanted or len(hits) < k:
                return [_search_item(r, s) for r, s in kept[offset:wanted]]
            k *= 4  # the prefix or the filter dropped some: ask recall for more

    def _list_namespaces(self, op: ListNamespacesOp) -> Callable[[], list[tuple[str, ...]]]:
        conditions = [_condition(c) for c in op.match_conditions or ()]
        depth = op.max_depth
        if depth is not None and (
            isinstance(depth, bool) or not isinstance(depth, int) or depth < 1
        ):
            raise IntegrationError(f"max_depth={depth!r}: expected a whole number, at least 1")
        limit, offset = _count(op.limit, "limit"), _count(op.offset, "offset")

        def namespaces() -> list[tuple[str, ...]]:
            found: set[tuple[str, ...]] = set()
            for record in self.memory.list():
                labels = tuple(record.namespace.split(SEPARATOR))
                if all(_matches(labels, kind, path) for kind, path in conditions):
                    found.add(labels if depth is None else labels[:depth])
            return sorted(found)[offset : offset + limit]

        return namespaces


def weft_namespace(namespace: tuple[str, ...]) -> str:
    """weft's namespace for a LangGraph namespace: its labels joined by ``.``.

    >>> weft_namespace(("notes", "2026"))
    'notes.2026'
    """
    return SEPARATOR.join(_labels(namespace, allow_empty=False))


def _labels(namespace: object, *, allow_empty: bool) -> tuple[str, ...]:
    if not isinstance(namespace, tuple | list) or (not namespace and not allow_empty):
        raise IntegrationError(
            f"namespace={namespace!r:.80}: a LangGraph namespace is a non-empty tuple of "
            "labels, e.g. ('memories', 'user-1')"
        )
    for label in namespace:
        if not isinstance(label, str) or not label or SEPARATOR in label or not label.isprintable():
            raise IntegrationError(
                f"namespace {tuple(namespace)!r:.120}: the label {label!r:.60} is not one "
                "weft can store; a label is a non-empty printable string without '.'"
            )
    return tuple(namespace)


def _key(key: object) -> str:
    if not isinstance(key, str) or not key or not key.isprintable():
        raise IntegrationError(
            f"key={key!r:.80}: a key of weft's long-term memory is a non-empty printable "
            "string, e.g. 'favourite-food'"
        )
    return key


def _count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise IntegrationError(f"{what}={value!r}: expected a whole number, 0 or more")
    return value


def _under(namespace: str, prefix: tuple[str, ...]) -> bool:
    return tuple(namespace.split(SEPARATOR))[: len(prefix)] == prefix


def _condition(condition: MatchCondition) -> tuple[str, tuple[str, ...]]:
    kind, path = condition.match_type, condition.path
    if kind not in ("prefix", "suffix"):
        raise IntegrationError(
            f"match_type={kind!r}: a namespace condition is 'prefix' or 'suffix'"
        )
    if not isinstance(path, tuple | list) or not all(isinstance(p, str) and p for p in path):
        raise IntegrationError(
            f"path={path!r:.80}: a namespace condition's path is a tuple of labels ('*' for "
            "any one label)"
        )
    return kind, tuple(path)


def _matches(labels: tuple[str, ...], kind: str, path: tuple[str, ...]) -> bool:
    if len(path) > len(labels):
        return False
    part = labels[: len(path)] if kind == "prefix" else labels[len(labels) - len(path) :]
    return all(want in ("*", have) for want, have in zip(path, part, strict=True))


def _matcher(filter: Mapping[str, Any] | None) -> Callable[[MemoryRecord], bool]:
    """Whether a record's value matches ``filter`` (refused at once when malformed)."""
    if not filter:
        return lambda _record: True
    if not isinstance(filter, Mapping):
        raise IntegrationError(
            f"filter={filter!r:.80}: a filter is a dict of field to value, e.g. "
            "{'kind': 'note'} or {'score': {'$gte': 3}}"
        )
    tests: list[tuple[list[str], Callable[[Any, Any], bool], Any]] = []
    for field, wanted in filter.items():
        path = str(field).split(".")
        if isinstance(wanted, Mapping) and wanted and all(str(k).startswith("$") for k in wanted):
            for name, operand in wanted.items():
                compare = _OPERATORS.get(name)
                if compare is None:
                    known = ", ".join(_OPERATORS)
                    raise IntegrationError(
                        f"filter on {field!r}: unknown operator {name!r}; the operators are {known}"
                    )
                tests.append((path, compare, operand))
        else:
            tests.append((path, _OPERATORS["$eq"], wanted))

    def check(record: MemoryRecord) -> bool:
        value = _plain(record.value)
        for path, compare, operand in tests:
            found = _field(value, path)
            try:
                if found is _ABSENT or not compare(found, operand):
                    return False
            except TypeError:  # 'a' > 3: not a match, as in a database
                return False
        return True

    return check


_ABSENT: Final = object()


def _field(value: Any, path: Sequence[str]) -> Any:
    for step in path:
        if not isinstance(value, dict) or step not in value:
            return _ABSENT
        value = value[step]
    return value


def _index_text(value: Mapping[str, Any], index: Any) -> str | None:
    """What recall searches for a put: None for weft's default (the whole value)."""
    if index is None:
        return None
    if index is False:
        return ""
    if isinstance(index, str) or not isinstance(index, list | tuple):
        raise IntegrationError(
            f"index={index!r:.80}: expected a list of fields, e.g. ['text'], or False for none"
        )
    plain = _plain(value)
    parts = []
    for field in index:
        found = _field(plain, str(field).split("."))
        if found is _ABSENT or found is None:
            continue
        parts.append(found if isinstance(found, str) else json.dumps(found, default=str))
    return "\n".join(parts)


def _plain(value: Any) -> dict[str, Any]:
    """A stored value as a LangGraph item's value: a plain dict."""
    if isinstance(value, dict):
        thawed = thaw(value)
        if isinstance(thawed, dict):
            return thawed
    plain = to_plain_json(value)
    return plain if isinstance(plain, dict) else {"value": plain}


def _search_item(record: MemoryRecord, score: float | None) -> SearchItem:
    return SearchItem(**_fields(record), score=score)


def _fields(record: MemoryRecord) -> dict[str, Any]:
    return {
        "namespace": tuple(record.namespace.split(SEPARATOR)),
        "key": record.key,
        "value": _plain(record.value),
        "created_at": datetime.fromtimestamp(record.created_at, tz=UTC),
        "updated_at": datetime.fromtimestamp(record.updated_at, tz=UTC),
    }
