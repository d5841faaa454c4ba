"""Every error weft raises on purpose, as one tree.

WeftError
├── StoreError                 the store refused a write or a read
│   ├── InvalidKeyError        a kind or path that is not well formed
│   ├── ValueTypeError         a value JSON cannot hold (a set, NaN, nested too deep)
│   ├── ReducerError           a reducer declared twice, or one that failed
│   ├── MissingEntryError      a read of a key that holds nothing
│   ├── MergeConflictError     two branches wrote one last-write-wins field
│   └── CodecError             JSON that cannot be decoded into values
├── RefError                   references (†kind.path) and _outputPath expressions
│   ├── ReferenceSyntaxError   text that does not parse (found before anything runs)
│   ├── UnresolvedReferenceError  a reference to nothing in the store (at run time)
│   └── OutputPathError        a value an output path cannot take (at run time)
├── AgentMemoryError           AgentMemory and its tools, used or set up wrong
│   └── MemoryKeyError         a key with no memory namespace, or the wrong kind
├── ModelError                 a model (reasoner or chat model) could not answer
│   ├── ModelConfigError       an adapter configured wrong: found before any request
│   ├── ModelInputError        a message or conversation built wrong: found before any request
│   ├── ProviderError          a provider refused, failed, or answered in an unknown shape
│   └── ScriptExhaustedError   a scripted model was asked more often than scripted
├── GraphError                 the WorkGraph engine
│   ├── GraphBuildError        wired wrong: found before anything runs
│   ├── NodeError              a node raised while the graph ran
│   ├── NodeTimeoutError       a node ran past its timeout
│   ├── PauseError             a pause outside a recorded run, or an answer to no question
│   └── RemoteError            a call sent to Ray could not run there (dead worker, no value)
├── AgentError                 the agent layer
│   ├── AgentBuildError        an agent configured wrong (template, actor): found when built
│   ├── ResponseProblem        a reply that cannot be used: the reasoner gets one corrective retry
│   └── AgentResponseError     a reasoner's reply still unusable after one corrective retry
├── PlanError                  tools, plans of tool calls, and the step/task/team executors
│   ├── PlanValidationError    a plan wired wrong, every problem listed (build time)
│   │   └── ToolDefinitionError  a tool defined wrong: its name, signature or schema
│   ├── ToolArgumentsError     arguments a tool's schema refuses; the tool did not run
│   ├── PlanRunError           a call that failed while a plan ran (run time)
│   └── ExecutorError          a step, task or team configured wrong, or that could not go on
├── TurnError                  the turn runtime: state schemas, turns and threads
│   ├── SchemaError            a schema, view or node declaration that is wrong (build time)
│   ├── ChannelOwnershipError  a write to a field the writer does not own, or to no field
│   ├── StateVersionError      a thread saved by a newer schema, or with no migration
│   └── MalformedStateError    a thread record that cannot be read (names thread and turn)
├── PersistError               a durable backend (event log or long-term memory)
│   ├── ConflictError          another writer appended to the thread first
│   ├── CorruptRecordError     a stored record that cannot be read
│   ├── FutureFormatError      a record or database written by a newer weft
│   ├── StepError              a step that is not stored (never written, or pruned)
│   ├── StorageError           the database itself failed (unreadable file, no server)
│   ├── OwnerError             long-term memory with neither a user nor a session id
│   └── UnreconciledCallError  a keyed call that began before a crash, its outcome unknown
├── ServeError                 a server (weft mcp) set up wrong: transport, address, no SDK
├── IntegrationError           an adapter for another framework: not installed, or given wrong
└── TelemetryError             tracing set up wrong: no OpenTelemetry API, not a tracer provider
"""

from __future__ import annotations


class WeftError(Exception):
    """Base class of every error weft raises on purpose."""

    def __reduce__(self) -> tuple[object, ...]:
        # Unpickle (Ray, multiprocessing) without __init__, whose keyword fields may be
        # required: the message and the fields come back as they were.
        return (_new, (type(self), *self.args), self.__dict__)


def _new(cls: type[WeftError], *args: object) -> WeftError:
    return cls.__new__(cls, *args)


class StoreError(WeftError):
    """The store refused an operation."""


class InvalidKeyError(StoreError, ValueError):
    """A kind or path that is not well formed."""


class ValueTypeError(StoreError, TypeError):
    """A value that cannot be stored because not every backend could save it as JSON: not
    JSON at all (a set, a socket), a float that is not finite, a lone surrogate, an int past
    Python's digit limit, containers nested past ``weft.store.MAX_DEPTH``."""


class ReducerError(StoreError):
    """A reducer declared twice with different functions, or one that raised."""


class MissingEntryError(StoreError, KeyError):
    """A read of a key that holds nothing."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class MergeConflictError(StoreError):
    """Two forks wrote the same last-write-wins field."""


class CodecError(StoreError, ValueError):
    """Stored JSON that cannot be turned back into values."""


class RefError(WeftError):
    """References (``†kind.path``, ``$ref:kind.path``) and ``_outputPath`` expressions."""


class ReferenceSyntaxError(RefError, ValueError):
    """A reference or output path whose text does not parse; ``text`` is that text and
    ``position`` the 0-based offset where parsing stopped (``None`` when not one place)."""

    def __init__(self, message: str, *, text: str = "", position: int | None = None) -> None:
        super().__init__(message)
        self.text = text
        self.position = position


class UnresolvedReferenceError(RefError, LookupError):
    """A reference that names nothing in the store. ``reference`` is its text, ``deepest``
    the deepest part that exists (``None``: not even the entry), ``keys`` what is there."""

    def __init__(
        self,
        message: str,
        *,
        reference: str = "",
        deepest: str | None = None,
        keys: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.reference = reference
        self.deepest = deepest
        self.keys = keys


class OutputPathError(RefError):
    """A tool result an output path cannot take (no alternative accepts it, say)."""


class AgentMemoryError(WeftError):
    """AgentMemory or its model tools used or set up wrong."""


class MemoryKeyError(AgentMemoryError, ValueError):
    """An AgentMemory key outside task:, step:, input: and shared:, or a kind it cannot hold."""


class RecallError(AgentMemoryError, ValueError):
    """Long-term recall by embedding could not compare vectors: an embedder that returned
    the wrong number of vectors, or vectors of another length under the same model name."""


class ModelError(WeftError):
    """A model could not answer: misconfigured, refused by its provider, or out of script."""


class ModelConfigError(ModelError, ValueError):
    """An adapter configured wrong (no API key, an unusable base URL or option)."""


class ModelInputError(ModelError, ValueError):
    """A chat message or conversation built wrong (an unknown role, a tool message that names
    no call, something that is not a message); found before any request is sent."""


class ProviderError(ModelError):
    """A provider refused or failed a request, or answered in a shape its API does not document.

    ``status`` is ``None`` when no response came (a timeout); ``provider_message`` and
    ``error_type`` are the provider's own words; ``request_id`` is the id its support asks for.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str,
        status: int | None = None,
        provider_message: str | None = None,
        error_type: str | None = None,
        attempts: int = 1,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.status = status
        self.provider_message = provider_message
        self.error_type = error_type
        self.attempts = attempts
        self.request_id = request_id


class ScriptExhaustedError(ModelError):
    """A scripted model (a test double) was called more times than it had replies."""


class GraphError(WeftError):
    """The WorkGraph engine."""


class GraphBuildError(GraphError, ValueError):
    """A graph wired wrong: a cycle, an empty graph, a pass-down a node cannot take."""


class NodeError(GraphError):
    """A node raised while the graph ran; the original exception is the cause."""


class NodeTimeoutError(NodeError, TimeoutError):
    """A node ran longer than its timeout."""


class PauseError(GraphError):
    """``interrupt()`` outside a unit of a recorded run, a question that cannot be stored,
    or answers that match no question waiting."""


class RemoteError(GraphError):
    """A call sent to another executor (``weft.distributed``) could not run there: its
    worker died more often than its retries allow, the cluster is out of reach, or a value
    cannot cross to or from the worker through weft's codec."""


class AgentError(WeftError):
    """The agent layer: a run that cannot go on (an agent already running, say)."""


class AgentBuildError(AgentError, ValueError):
    """An agent configured wrong: an unknown placeholder, a bad name or actor; found when built."""


class ResponseProblem(AgentError, ValueError):
    """What is wrong with a reasoner's reply, in words the reasoner is shown in the one
    corrective retry (``AgentResponseError`` if the retry's reply is no better)."""


class AgentResponseError(AgentError):
    """A reasoner's reply the agent could not use, even after one corrective retry.
    ``raw`` is the last reply, ``problem`` what was wrong with it (as the reasoner was told)."""

    def __init__(self, message: str, *, raw: str, problem: str, agent: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw
        self.problem = problem
        self.agent = agent


class PlanError(WeftError):
    """Tools and plans of tool calls (``weft.calls``) and the executors of ``weft.plan``."""


class PlanValidationError(PlanError, ValueError):
    """A plan wired wrong, found before anything ran. ``problems`` lists every problem
    (each names the call or task and the fix); the message shows them all."""

    def __init__(self, message: str, *, problems: tuple[object, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class ToolDefinitionError(PlanValidationError):
    """A tool defined wrong, found when it is made: a name the providers refuse, a
    signature whose types have no JSON Schema, parameters that are not a schema, or a
    schema that cannot take the strict form asked for. ``tool`` names the tool."""

    def __init__(self, message: str, *, tool: str = "") -> None:
        super().__init__(message, problems=(message,))
        self.tool = tool


class ToolArgumentsError(PlanError, ValueError):
    """Arguments a tool's JSON Schema refuses (wrong types, unknown or missing arguments,
    nesting too deep); the tool's function did not run. ``tool`` names the tool,
    ``arguments`` the arguments at fault and ``problems`` says, one line each, what was
    wrong and what was expected."""

    def __init__(
        self,
        message: str,
        *,
        tool: str = "",
        arguments: tuple[str, ...] = (),
        problems: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.tool = tool
        self.arguments = arguments
        self.problems = problems


class PlanRunError(PlanError):
    """A call of a plan failed while the plan ran; ``call`` is its id, ``index`` its place
    in the plan, and the original error is ``__cause__``."""

    def __init__(
        self, message: str, *, call: str = "", tool: str = "", index: int | None = None
    ) -> None:
        super().__init__(message)
        self.call = call
        self.tool = tool
        self.index = index


class ExecutorError(PlanError, ValueError):
    """A step, task or team executor set up wrong, or one that could not go on."""


class TurnError(WeftError):
    """The turn runtime (``weft.runtime``): a turn that cannot run, or a thread it cannot read."""


class SchemaError(TurnError, ValueError):
    """A state schema, view or node declaration that is wrong, found when the runtime is built."""


class ChannelOwnershipError(TurnError):
    """A write to a field the writer does not declare, or to a name that is no field; nothing
    of that turn is stored. ``writer`` is the node, or ``"the caller"`` for a turn's input."""

    def __init__(self, message: str, *, writer: str = "", field: str = "") -> None:
        super().__init__(message)
        self.writer = writer
        self.field = field


class StateVersionError(TurnError):
    """A thread saved by a newer schema version, or by an older one with no migration."""

    def __init__(
        self, message: str, *, thread_id: str = "", found: int = 0, current: int = 0
    ) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.found = found
        self.current = current


class MalformedStateError(TurnError):
    """A thread record that cannot be read. ``thread_id``, ``turn`` (the turn whose record
    it is) and ``step`` say where; the turns before it stay loadable."""

    def __init__(
        self, message: str, *, thread_id: str = "", turn: int | None = None, step: int | None = None
    ) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.turn = turn
        self.step = step


class PersistError(WeftError):
    """A durable backend (the event log or long-term memory) refused or failed."""


class ConflictError(PersistError):
    """Another writer appended to the thread first (optimistic concurrency on the step); the
    loser's batch was not written. ``expected`` is the step it saw, ``actual`` the step now."""

    def __init__(self, message: str, *, thread_id: str, expected: int, actual: int) -> None:
        super().__init__(message)
        self.thread_id = thread_id
        self.expected = expected
        self.actual = actual


class CorruptRecordError(PersistError, ValueError):
    """A stored record that is not what weft writes (malformed JSON, missing fields)."""


class FutureFormatError(PersistError):
    """A record or a database schema written by a newer weft than this one."""


class StepError(PersistError, LookupError):
    """A step of a thread that is not stored: past its end, or pruned away."""


class StorageError(PersistError):
    """The database failed: a file that is not a database, a server that cannot be reached."""


class OwnerError(PersistError, ValueError):
    """Long-term memory opened with neither a user id nor a session id to own it."""


class UnreconciledCallError(PersistError):
    """A keyed call that began in an earlier run (its intent is recorded) and has no result:
    the process stopped after the call started, so whether its effect happened is unknown,
    and the call is not made again blindly. ``key`` is the caller's key, ``idempotency_key``
    the key the call was given, ``path`` where it is recorded (kind ``step``)."""

    def __init__(self, message: str, *, key: str, idempotency_key: str, path: str) -> None:
        super().__init__(message)
        self.key = key
        self.idempotency_key = idempotency_key
        self.path = path


class ServeError(WeftError, ValueError):
    """A server (``weft mcp``) set up wrong: an unknown transport, an address it cannot
    listen on, the SDK it needs not installed. Found before anything is served."""


class IntegrationError(WeftError, ValueError):
    """An adapter for another agent framework (``weft.integrations``) that cannot do what it
    was asked: the framework is not installed (the message names the extra to install), or
    it was given something it cannot adapt (a tool with no function, a store namespace
    LangGraph could not have written). Found before the framework runs anything."""


class TelemetryError(WeftError, ValueError):
    """Tracing set up wrong (``weft.telemetry.instrument``): the OpenTelemetry API is not
    installed, or what was passed as the tracer provider is not one. Found before any
    run is traced."""
