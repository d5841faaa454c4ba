"""How each node of a graph reads its ancestors' writes: the plan of its view, computed
once per graph (``weft.graph.stores`` says what a view is and how runs use it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from weft.graph.build import Schedule


@dataclass(frozen=True, slots=True)
class Views:
    """How each node's view is built, computed once per graph.

    ``joins[j]`` is ``(base, extras)`` for a join that is not full: the predecessor whose
    view to start from (``-1``: the run's start) and the ancestors whose changes to merge
    in, in canonical order. ``shortcuts[j]``, where it has fewer extras: the predecessor
    with the fewest, whose extras do not all come after its own ancestors; it serves when
    none of the fields the extras write was written on the way to that predecessor's view
    (then the order they go in does not matter). ``needed[i]``: a later view is built from
    node ``i``'s.
    """

    joins: dict[int, tuple[int, tuple[int, ...]]]
    shortcuts: dict[int, tuple[int, tuple[int, ...]]]
    needed: tuple[bool, ...]

    @classmethod
    def of(cls, schedule: Schedule) -> Views:
        preds, succs, full = schedule.preds, schedule.succs, schedule.full
        n = schedule.size
        needed = [False] * n
        for s, ps in enumerate(preds):
            if not full[s] and len(ps) == 1:
                needed[ps[0]] = True
        joins = [j for j, ps in enumerate(preds) if not full[j] and len(ps) > 1]
        plans: dict[int, tuple[int, tuple[int, ...]]] = {}
        shortcuts: dict[int, tuple[int, tuple[int, ...]]] = {}
        if not joins:
            return cls(plans, shortcuts, tuple(needed))
        # Each node's ancestors as a bit set, in canonical order, kept only while a
        # successor still needs it: a long chain beside a join holds a few sets at a time,
        # not one per node (which would be quadratic in memory).
        ancestors: list[int] = [0] * n
        waiting = [len(ss) for ss in succs]
        for s in range(joins[-1] + 1):
            bits = 0
            for p in preds[s]:
                bits |= ancestors[p] | (1 << p)
            ancestors[s] = bits
            if not full[s] and len(preds[s]) > 1:
                plans[s] = plan = _base_and_extras(s, preds[s], ancestors)
                fewest, by = min(
                    ((bits & ~(ancestors[p] | (1 << p))).bit_count(), p)
                    for p in dict.fromkeys(preds[s])
                )
                if fewest < len(plan[1]):
                    shortcuts[s] = (by, _bits(bits & ~(ancestors[by] | (1 << by))))
                for base, extras in (plan, shortcuts.get(s, (-1, ()))):
                    if base >= 0:
                        needed[base] = True
                    for u in extras:
                        needed[u] = True
            for p in preds[s]:
                waiting[p] -= 1
                if not waiting[p]:
                    ancestors[p] = 0
        return cls(plans, shortcuts, tuple(needed))


def _base_and_extras(
    j: int, preds: Sequence[int], ancestors: Sequence[int]
) -> tuple[int, tuple[int, ...]]:
    """The predecessor whose view to extend, and what to add, keeping canonical order."""
    best: tuple[int, int, int] | None = None  # (extra count, pred, extras)
    for p in preds:
        seen = ancestors[p] | (1 << p)
        extras = ancestors[j] & ~seen
        if extras and (extras & -extras).bit_length() < seen.bit_length():
            continue  # its view plus the extras would not be in canonical order
        if best is None or extras.bit_count() < best[0]:
            best = (extras.bit_count(), p, extras)
    if best is None:
        return -1, _bits(ancestors[j])
    return best[1], _bits(best[2])


def _bits(bits: int) -> tuple[int, ...]:
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return tuple(out)
