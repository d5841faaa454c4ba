"""How a node's result reaches its successors (pass-down modes) and how a node steers the run
(stop flags).

Arguments thread through the graph. A start node is called with the arguments given to
``run()``; every other node is called with its *base* arguments, changed by what each of
its predecessors contributes. The base is what its first predecessor (in edge order, the
order of the ``add_next`` calls, among the predecessors that were not aborted) was called
with. A predecessor's ``result_pass_down_mode`` says what it contributes:

==========================  =====================================================
``NoPassDown`` (default)    nothing: the result does not flow on
``ResultAsFirstArg``        its result as a positional argument, replacing the
                            base's first positional argument
``ResultAsLeadingArgs``     its result put before the base's positional
                            arguments (a tuple result is spread, anything else
                            is one argument)
``"name"`` (a ``str``)      its result as the keyword argument ``name``
a callable                  ``mode(result, *args, **kwargs)`` returns ``None``
                            (keep the arguments) or ``(args, kwargs)``
==========================  =====================================================

A callable mode runs once per finished node, on the arguments that node was called with,
also when the node has no successor (a shared list then gets the last result too); every
successor gets what it handed down. An aborted node hands nothing down.

With one predecessor the mode applies as the table says. With several (fan-in), the node
runs once, when every predecessor has finished or been aborted, and gets every
contribution, never just the first or the last:

- positional results in edge order: ``(*results, *base_args)``, where the base's first
  argument is dropped if any contributing predecessor uses ``ResultAsFirstArg``;
- keywords: a keyword that two or more predecessors write (counted on the graph, not on
  the run) gets the *list* of their results in edge order; a keyword one predecessor
  writes gets that result as it is;
- the base is the ``(args, kwargs)`` a callable predecessor handed down, if one did (two
  that did is an error: a node has one base), else its first contributing predecessor's;
- an aborted predecessor contributes nothing and positions close up; a node whose
  predecessors were all aborted or skipped is skipped.

A node returns ``(WorkGraphStopFlags.X, result)`` to steer the run; only a 2-tuple whose
first item *is* a ``WorkGraphStopFlags`` member is a flag, and the flag is never handed
downstream, only ``result``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeAlias

from weft.errors import GraphBuildError, GraphError


class ResultPassDownMode(enum.Enum):
    """The fixed pass-down modes; a ``str`` or a callable are the other two."""

    NoPassDown = "NoPassDown"
    ResultAsFirstArg = "ResultAsFirstArg"
    ResultAsLeadingArgs = "ResultAsLeadingArgs"


class WorkGraphStopFlags(enum.Enum):
    """What a node may return beside its result, as ``(flag, result)``.

    ``Continue`` changes nothing. ``Terminate`` stops scheduling: nodes already running
    finish, and the run returns what finished. ``AbortBranch`` keeps this node's result
    out of its successors and skips every node that depends only on aborted nodes.
    """

    Continue = "Continue"
    Terminate = "Terminate"
    AbortBranch = "AbortBranch"


PassDown: TypeAlias = ResultPassDownMode | str | Callable[..., Any]
"""What ``result_pass_down_mode`` accepts."""

Args: TypeAlias = tuple[tuple[Any, ...], dict[str, Any]]
"""A node's call arguments: ``(args, kwargs)``; never mutated once built."""

# Mode codes: an int compare is the cheapest dispatch on the hot path.
NO: Final = 0
FIRST: Final = 1
LEADING: Final = 2
KEYWORD: Final = 3
CALL: Final = 4

_CODES: Final = {
    ResultPassDownMode.NoPassDown: NO,
    ResultPassDownMode.ResultAsFirstArg: FIRST,
    ResultPassDownMode.ResultAsLeadingArgs: LEADING,
}


def mode_code(mode: object, *, node: str) -> int:
    """The code of a pass-down mode, or a ``GraphBuildError`` naming the node."""
    if isinstance(mode, ResultPassDownMode):
        return _CODES[mode]
    if isinstance(mode, str):
        if not mode.isidentifier():
            raise GraphBuildError(
                f"node {node!r}: result_pass_down_mode {mode!r} is a string, which means "
                "'pass the result as this keyword', but it is not a valid Python identifier; "
                "use a parameter name of the next node"
            )
        return KEYWORD
    if callable(mode):
        return CALL
    raise GraphBuildError(
        f"node {node!r}: result_pass_down_mode {mode!r} is a {type(mode).__name__}; expected a "
        "ResultPassDownMode member, a keyword name (str) or a callable "
        "(result, *args, **kwargs) -> None | (args, kwargs)"
    )


def pass_one(code: int, arg: Any, result: Any, base: Args) -> Args:
    """The arguments of a node with one contributing predecessor (the table's rule)."""
    if code == NO:
        return base
    args, kwargs = base
    if code == FIRST:
        return (result, *args[1:]), kwargs
    if code == LEADING:
        return ((*result, *args) if result.__class__ is tuple else (result, *args)), kwargs
    if code == KEYWORD:
        new = dict(kwargs)
        new[arg] = result
        return args, new
    handed = hand_down(arg, result, args, kwargs)
    return base if handed is None else handed


def pass_many(
    contributions: Sequence[tuple[int, Any, Any]], base: Args, multi_keywords: frozenset[str]
) -> Args:
    """The arguments of a fan-in node: ``contributions`` are ``(code, arg, result)`` of the
    contributing predecessors in edge order (for a callable mode ``(CALL, key, handed)``:
    the predecessor's key and what ``hand_down`` gave); ``multi_keywords`` are the keywords
    that several predecessors write on the graph (they always get a list)."""
    lead: list[Any] = []
    drop_first = False
    keywords: dict[str, Any] = {}
    handed: list[tuple[str, Args]] = []
    for code, arg, result in contributions:
        if code == NO:
            continue
        if code == FIRST:
            lead.append(result)
            drop_first = True
        elif code == LEADING:
            if result.__class__ is tuple:
                lead.extend(result)
            else:
                lead.append(result)
        elif code == KEYWORD:
            if arg in multi_keywords:
                keywords.setdefault(arg, []).append(result)
            else:
                keywords[arg] = result
        elif result is not None:
            handed.append((arg, result))
    if len(handed) > 1:
        raise GraphError(
            f"the pass-down callables of {' and '.join(key for key, _ in handed)} each handed "
            "down arguments, and a fan-in node has one set of base arguments; make all but "
            "one of them return None"
        )
    base_args, base_kwargs = handed[0][1] if handed else base
    args = (*lead, *(base_args[1:] if drop_first else base_args))
    return args, ({**base_kwargs, **keywords} if keywords else base_kwargs)


def hand_down(fn: Any, result: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Args | None:
    """Run a callable pass-down mode: the ``(args, kwargs)`` it hands down, or ``None`` to
    keep the arguments."""
    out = fn(result, *args, **kwargs)
    if out is None:
        return None
    if (
        isinstance(out, (tuple, list))
        and len(out) == 2
        and isinstance(out[0], Sequence)
        and not isinstance(out[0], str)
        and isinstance(out[1], Mapping)
    ):
        return tuple(out[0]), dict(out[1])
    raise TypeError(
        f"the pass-down callable {getattr(fn, '__qualname__', fn)!r} returned {out!r}; it must "
        "return None (keep the arguments) or a pair (args, kwargs) with a sequence and a dict"
    )
