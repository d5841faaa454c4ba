"""weft's tools and memory inside other agent frameworks, one module each, each importing its
framework only when imported itself (``pip install 'weft[integrations]'``):

- ``weft.integrations.pydantic_ai.tools(...)``: pydantic-ai ``Tool`` s;
- ``weft.integrations.openai_agents.tools(...)``: OpenAI Agents SDK ``FunctionTool`` s;
- ``weft.integrations.langchain.tools(...)``: LangChain ``BaseTool`` s (LangGraph's
  ``ToolNode`` and ``create_react_agent`` take them);
- ``weft.integrations.langgraph.WeftStore``: a LangGraph ``BaseStore`` over weft's
  long-term memory.

Each takes an ``AgentMemory`` (its memory tools), ``weft.calls.Tool`` s, or a list of them.
"""

__all__: list[str] = []
