"""``weft threads``, ``show``, ``events``, ``state``, ``diff``, ``memory``, ``pauses``,
``answer``, ``fork`` and ``prune``: inspect and steer the runs stored in a SQLite file or a
PostgreSQL database. Each command reads through ``weft.inspect.Reader``, prints a table
(``--json``: the same records as JSON), and says what went wrong in one line with a nonzero
exit when the database, the thread or the step is not there."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Final, NoReturn

import typer

from weft.errors import PauseError, WeftError

if TYPE_CHECKING:
    from rich.console import Console

    from weft.inspect import Progress, Reader

PANEL: Final = "Inspect stored runs"
EXIT_ERROR: Final = 2

Db = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="PATH|DSN",
        help="A SQLite file (default .weft/weft.db) or a postgresql:// DSN.",
    ),
]
Schema = Annotated[str, typer.Option("--schema", help="The PostgreSQL schema of weft's tables.")]
Json = Annotated[bool, typer.Option("--json", help="Print the records as JSON.")]
Thread = Annotated[str, typer.Argument(help="The thread id (weft threads lists them).")]
At = Annotated[
    int | None, typer.Option("--at", metavar="STEP", help="As of this step (default: the last).")
]


def threads(db: Db = None, schema: Schema = "weft", as_json: Json = False) -> None:
    """List every thread and its runs: status, steps, size, last activity, paused or not."""
    with _reading("threads", db, schema) as reader, _progress("reading threads") as progress:
        found = reader.threads(progress=progress)
    none = f"no threads in {reader.location}"
    _emit(found, as_json, lambda views: views.threads_table(found) if found else none)


def show(
    thread: Thread, at: At = None, db: Db = None, schema: Schema = "weft", as_json: Json = False
) -> None:
    """Show a thread's timeline: graph nodes, agent iterations, calls, turns, questions."""
    with _reading("show", db, schema) as reader, _progress("replaying") as progress:
        summary = reader.thread(thread)
        items = reader.timeline(thread, at=at, progress=progress)
    found = {"thread": summary, "timeline": items}
    _emit(found, as_json, lambda views: views.timeline_view(summary, items))


def events(
    thread: Thread,
    since: Annotated[
        int, typer.Option("--since", metavar="STEP", help="Only the events after this step.")
    ] = 0,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new events until Ctrl-C.")
    ] = False,
    db: Db = None,
    schema: Schema = "weft",
    as_json: Json = False,
) -> None:
    """Print a thread's stored events (--follow: and each new one as it is written)."""
    with _reading("events", db, schema) as reader:
        if follow:
            _follow(reader, thread, since, as_json)
            return
        found = reader.events(thread, since=since)
    if as_json:
        _json(found)
        return
    from weft.inspect.views import event_lines

    console = _console()
    for lines in event_lines(found):
        console.print(lines, soft_wrap=True)


def state(
    thread: Thread,
    at: At = None,
    prefix: Annotated[
        str | None,
        typer.Option("--prefix", metavar="KEY", help="Only keys starting so (state:plan)."),
    ] = None,
    db: Db = None,
    schema: Schema = "weft",
    as_json: Json = False,
) -> None:
    """Print a thread's entries at a step (run records are in weft show)."""
    with _reading("state", db, schema) as reader, _progress("replaying") as progress:
        found = reader.state(thread, at=at, prefix=prefix, progress=progress)
    _emit(found, as_json, lambda views: views.state_table(found))


def diff(
    thread: Thread,
    a: Annotated[int, typer.Argument(help="The earlier step.")],
    b: Annotated[int, typer.Argument(help="The later step.")],
    db: Db = None,
    schema: Schema = "weft",
    as_json: Json = False,
) -> None:
    """Show what changed in a thread's state between two steps."""
    with _reading("diff", db, schema) as reader, _progress("replaying") as progress:
        found = reader.diff(thread, a, b, progress=progress)
    _emit(found, as_json, lambda views: views.diff_table(found))


def memory(
    thread: Thread, at: At = None, db: Db = None, schema: Schema = "weft", as_json: Json = False
) -> None:
    """List a thread's memory entries as memory_list shows them (every one, newest first)."""
    with _reading("memory", db, schema) as reader, _progress("replaying") as progress:
        found = reader.memory(thread, at=at, progress=progress)
    _emit(found, as_json, lambda views: views.memory_table(thread, found))


def pauses(
    thread: Thread,
    waiting: Annotated[
        bool, typer.Option("--waiting", help="Only the questions without an answer.")
    ] = False,
    db: Db = None,
    schema: Schema = "weft",
    as_json: Json = False,
) -> None:
    """List the questions a thread's runs asked a person, and their answers."""
    with _reading("pauses", db, schema) as reader:
        found = reader.pauses(thread, waiting=waiting)
    _emit(found, as_json, lambda views: views.pauses_table(thread, found))


def answer(
    thread: Thread,
    value: Annotated[
        str, typer.Argument(metavar="ANSWER", help="JSON (yes, 42, {...}) or, if not, text.")
    ],
    question: Annotated[
        str | None,
        typer.Option(
            "--id", metavar="QUESTION", help="The question's id (needed when several wait)."
        ),
    ] = None,
    text: Annotated[bool, typer.Option("--text", help="Take ANSWER as text, never JSON.")] = False,
    db: Db = None,
    schema: Schema = "weft",
    as_json: Json = False,
) -> None:
    """Answer a paused run; its owner resumes it with its run id and the answer is there."""
    with _reading("answer", db, schema) as reader:
        key = question if question is not None else _the_question(reader, thread)
        given: Any = value if text else _json_or_text(value)
        answered = reader.answer(thread, {key: given})
    if as_json:
        _json(answered)
        return
    for pause in answered:
        _console().print(
            f"answered {pause.id}: {json.dumps(given, ensure_ascii=False)}. The run "
            f"{pause.run_id!r} goes on when its owner runs it again with run_id="
            f"{pause.run_id!r}."
        )


def fork(
    thread: Thread,
    step: Annotated[int, typer.Argument(help="The step the new thread starts from.")],
    to: Annotated[
        str | None, typer.Option("--to", metavar="NEW", help="The new thread's id.")
    ] = None,
    db: Db = None,
    schema: Schema = "weft",
    as_json: Json = False,
) -> None:
    """Start a new thread from a thread's step (the thread itself is unchanged)."""
    with _reading("fork", db, schema) as reader:
        made = reader.fork(thread, step, to=to)
    _emit(made, as_json, lambda _: f"forked {thread} at step {step} into {made.thread_id}")


def prune(
    thread: Thread,
    keep: Annotated[
        int, typer.Option("--keep", metavar="N", help="How many of the last steps to keep.")
    ],
    db: Db = None,
    schema: Schema = "weft",
    as_json: Json = False,
) -> None:
    """Drop a thread's older steps, keeping the last N (loadable from the cut on)."""
    with _reading("prune", db, schema) as reader, _spinner(f"pruning {thread}"):
        removed = reader.prune(thread, keep_last=keep)
        info = reader.thread(thread)
    if as_json:
        _json({"thread_id": thread, "removed": removed, "first_step": info.first_step})
        return
    _console().print(
        f"pruned {thread}: {removed} events removed; steps {info.first_step}..{info.last_step} "
        "remain"
    )


COMMANDS: Final[tuple[Callable[..., None], ...]] = (
    threads,
    show,
    events,
    state,
    diff,
    memory,
    pauses,
    answer,
    fork,
    prune,
)


def register(app: typer.Typer) -> None:
    """Add the inspection commands to ``app``, under one help panel."""
    for command in COMMANDS:
        app.command(rich_help_panel=PANEL)(command)


# ------------------------------------------------------------------ internals


@contextmanager
def _reading(command: str, db: str | None, schema: str) -> Iterator[Reader]:
    """The reader of ``db``; a weft error inside is one line on stderr and a nonzero exit."""
    from weft.inspect import Reader

    try:
        with Reader.open(db, schema=schema) as reader:
            yield reader
    except WeftError as error:
        _fail(command, error)


def _fail(command: str, error: WeftError) -> NoReturn:
    typer.echo(f"weft {command}: {' '.join(str(error).split())}", err=True)
    raise typer.Exit(code=EXIT_ERROR)


def _follow(reader: Reader, thread: str, since: int, as_json: bool) -> None:
    from weft.inspect import to_json
    from weft.inspect.views import event_line

    console = _console()
    try:
        for event in reader.follow(thread, since=since):
            if as_json:  # one object a line, flushed: a pipe reads each as it comes
                typer.echo(json.dumps(to_json(event), ensure_ascii=False))
            else:
                console.print(event_line(event), soft_wrap=True)
    except KeyboardInterrupt:
        return


def _the_question(reader: Reader, thread: str) -> str:
    waiting = reader.pauses(thread, waiting=True)
    if len(waiting) == 1:
        return waiting[0].id
    if not waiting:
        raise PauseError(f"no question waits for an answer in thread {thread!r}")
    ids = ", ".join(p.id for p in waiting)
    raise PauseError(
        f"{len(waiting)} questions wait in thread {thread!r} ({ids}); say which with --id"
    )


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def _json(value: Any) -> None:
    from weft.inspect import to_json

    typer.echo(json.dumps(to_json(value), ensure_ascii=False, indent=2))


def _emit(found: Any, as_json: bool, render: Callable[[Any], Any]) -> None:
    """``found`` as JSON, or what ``render(weft.inspect.views)`` makes of it, printed (rich
    is imported only to render)."""
    if as_json:
        _json(found)
    else:
        from weft.inspect import views

        _console().print(render(views))


def _console() -> Console:
    from rich.console import Console

    return Console(soft_wrap=False)


@contextmanager
def _progress(what: str) -> Iterator[Progress | None]:
    """A progress bar on stderr for long work, when stderr is a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    bar = Progress(
        TextColumn(what), BarColumn(), MofNCompleteColumn(), console=console, transient=True
    )
    task = bar.add_task(what, total=None)
    with bar:
        yield lambda done, total: bar.update(task, completed=done, total=total)


@contextmanager
def _spinner(what: str) -> Iterator[None]:
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    with console.status(what):
        yield
