"""The turn runtime of seed 004: state schemas with lifecycles, the input/output
contract, the runtime context, and checkpointed threads of turns on one store."""

from weft.runtime.codec import StateCodec, ThreadRecord
from weft.runtime.context import WorkflowContext, working_memory_loader
from weft.runtime.finalise import Transcript
from weft.runtime.lifecycle import Input, Loaded, Reducer, TurnScoped
from weft.runtime.nodes import NodeSpec, node
from weft.runtime.schema import Field, Group, StateSchema
from weft.runtime.streaming import StageEvent, TurnResult
from weft.runtime.turns import TurnRuntime
from weft.runtime.views import TurnState

__all__ = [
    "Field",
    "Group",
    "Input",
    "Loaded",
    "NodeSpec",
    "Reducer",
    "StageEvent",
    "StateCodec",
    "StateSchema",
    "ThreadRecord",
    "Transcript",
    "TurnResult",
    "TurnRuntime",
    "TurnScoped",
    "TurnState",
    "WorkflowContext",
    "node",
    "working_memory_loader",
]
