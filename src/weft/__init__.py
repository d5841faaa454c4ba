"""weft: state and memory for LLM agents, on one store with reducers, forks and an event log."""

from weft.store import Store

__version__ = "0.1.0"

__all__ = ["Store", "__version__"]
