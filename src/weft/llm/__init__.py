"""The model layer: reasoners, chat models, provider adapters and scripted doubles (README:
"Models"). httpx is imported only when a request is made."""

from weft.llm.anthropic import AnthropicChatModel
from weft.llm.messages import (
    REFUSAL,
    AssistantMessage,
    ChatMessage,
    Completion,
    MessageLike,
    Thinking,
    ToolCall,
    Usage,
)
from weft.llm.openai import OpenAIChatModel
from weft.llm.protocols import ChatModel, ChatModelBase, Reasoner, areason, reason
from weft.llm.scripted import ScriptedCall, ScriptedChatModel, ScriptedReasoner
from weft.llm.streaming import (
    MessageDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStarted,
    astream,
)
from weft.llm.tools import ToolDefinition, ToolLike, ToolSpec, as_tool_spec

__all__ = [
    "REFUSAL",
    "AnthropicChatModel",
    "AssistantMessage",
    "ChatMessage",
    "ChatModel",
    "ChatModelBase",
    "Completion",
    "MessageDone",
    "MessageLike",
    "OpenAIChatModel",
    "Reasoner",
    "ScriptedCall",
    "ScriptedChatModel",
    "ScriptedReasoner",
    "StreamEvent",
    "TextDelta",
    "Thinking",
    "ThinkingDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallStarted",
    "ToolDefinition",
    "ToolLike",
    "ToolSpec",
    "Usage",
    "areason",
    "as_tool_spec",
    "astream",
    "reason",
]
