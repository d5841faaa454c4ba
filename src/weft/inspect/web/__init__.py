"""The web inspector (``weft inspect``): a local page over a durable database that shows
threads, runs, the timeline, state and its diffs, memory, pauses and forks, live.

Needs the ``inspect`` extra (FastAPI and uvicorn), imported only when the app is built.
"""

from weft.inspect.web.server import Binding, binding, serve, server

__all__ = ["Binding", "binding", "serve", "server"]
