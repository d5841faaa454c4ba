"""weft's errors survive pickling (Ray, multiprocessing) with their message and fields."""

from __future__ import annotations

import pickle

import pytest

from weft import errors

CASES = [
    errors.ReferenceSyntaxError("bad ref", text="†x.", position=3),
    errors.UnresolvedReferenceError("no †a.b", reference="†a.b", deepest="a", keys=("c",)),
    errors.ProviderError("refused", provider="openai", model="m", status=429, attempts=3),
    errors.AgentResponseError("unusable", raw="<x>", problem="no tag", agent="ann"),
    errors.PlanValidationError("2 problems", problems=("a", "b")),
    errors.PlanRunError("call failed", call="c1", tool="t", index=2),
    errors.ToolDefinitionError("bad name", tool="t"),
    errors.ToolArgumentsError("t: bad", tool="t", arguments=("n",), problems=("bad",)),
    errors.ChannelOwnershipError("not yours", writer="n", field="f"),
    errors.StateVersionError("newer", thread_id="t", found=3, current=2),
    errors.MalformedStateError("unreadable", thread_id="t", turn=4, step=9),
    errors.ConflictError("lost", thread_id="t", expected=1, actual=2),
    errors.MissingEntryError("state:a holds nothing"),
    errors.StorageError("no server"),
    errors.UnreconciledCallError("unknown", key="pay", idempotency_key="calls/pay~1", path="p"),
]


@pytest.mark.parametrize("error", CASES, ids=lambda e: type(e).__name__)
def test_an_error_pickles_with_its_message_and_fields(error: errors.WeftError) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error) and copy.args == error.args
    assert vars(copy) == vars(error)


def test_lookup_errors_show_their_message_unquoted() -> None:
    assert str(errors.MissingEntryError("state:a holds nothing")) == "state:a holds nothing"
    assert str(errors.UnresolvedReferenceError("no †a.b")) == "no †a.b"
