"""What every command shares: options, the runtime, JSON output, and how their Typer apps are made.

Errors are not handled here: `executor/cli/main.py` turns whatever a command raises into one line and an exit code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from executor.core.errors import ExecutorError, InputError, json_safe, terminal_safe

console = Console()
err_console = Console(stderr=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object for scripts")]
KbOpt = Annotated[str, typer.Option("--kb", help="knowledge base name")]
KbsOpt = Annotated[
    list[str] | None,
    typer.Option("--kb", help="the KB of each --labels file, in the same order (one name: all of them)"),
]
GradingOpt = Annotated[
    str | None,
    typer.Option(
        "--grading",
        help="how this KB's results are graded: ranker (the calibrated model, the default for new KBs) "
        "or similarity (the dense similarity alone)",
    ),
]


def check_grading(grading: str | None) -> str | None:
    from executor.core.settings import GRADINGS

    if grading is not None and grading not in GRADINGS:
        raise InputError(f"--grading is one of {', '.join(GRADINGS)}, not {grading!r}")
    return grading


SessionOpt = Annotated[str | None, typer.Option("--session", help="session id; reuse it to resume the session")]
SessionArg = Annotated[str, typer.Argument(help="the session id (as given to --session, or printed by ask/chat)")]
KbArg = Annotated[str, typer.Argument(help="knowledge base name")]


def warn_damaged_graph(folders) -> None:
    """One stderr line per damaged graph folder a lookup went on without (its answer stands, exit 0): the graph
    expansion was skipped, which must not pass unnoticed."""
    from executor.core.errors import warn

    for folder in dict.fromkeys(f for f in folders if f):
        warn(
            f"the knowledge graph under {folder} is damaged, so this answer has no graph expansion: restore the "
            "folder from a backup, or move it away and run `executor ingest --rebuild`"
        )


def session_or_new(session: str | None, prefix: str) -> str:
    """The session given, or a new one when none was; an empty `--session ""` is a mistake, not "new"."""
    if session is None:
        import uuid

        return f"{prefix}-{uuid.uuid4().hex[:12]}"
    if not session.strip():
        raise InputError("--session is empty: give a session id, or leave the option out for a new session")
    return session


def sub_app(**kwargs) -> typer.Typer:
    """A Typer app with the conventions of every `executor` command: -h, completion, help text taken literally
    (rich markup off, so `[doc_key, ...]` in a help text prints as written)."""
    return typer.Typer(
        no_args_is_help=True,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
        **kwargs,
    )


def echo(text: str, **kwargs) -> None:
    """Print text that may come from documents: escape sequences in it (OSC, CSI) are shown, not obeyed."""
    typer.echo(terminal_safe(text), **kwargs)


def runtime(source: str | None = None, serve_model: bool = False):
    """The stores for one command; `source` tags its rows in the invocation log (chat, ask, lookup, eval, ...);
    `serve_model`: the command talks to the chat model, served locally when EXECUTOR_LOCAL_MODEL is set."""
    from executor.agent.runtime import Runtime

    return Runtime(source=source, serve_model=serve_model)


def config_to_write() -> None:
    """`--write` may name, in EXECUTOR_CONFIG, the file it is about to create; everywhere else a config file
    named there but missing is an error (a typo must not silently mean "no config"), so it is created first."""
    from executor.core.settings import config_named, config_path

    path = config_path()
    if config_named() and not path.exists():
        try:
            path.touch()
        except OSError as exc:
            raise InputError(f"--write: cannot create {path} (EXECUTOR_CONFIG): {exc.strerror or exc}") from exc


def print_json(data) -> None:
    typer.echo(json_safe(json.dumps(data, ensure_ascii=False, indent=2, default=str)))


def write_text(path: Path, text: str) -> None:
    """A page or report the user asked for; an unwritable path is one line, not a traceback."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ExecutorError(f"cannot write {path}: {exc.strerror or exc}") from exc


def output_file(option: str, path: Path | None, suffix: str = "", example: str = "") -> None:
    """A file the command was asked to write, checked before the work that fills it: a folder is bad input (it
    would fail only at the end, or a plot be written beside it as FOLDER.png), and a plot needs its `.png` name
    (matplotlib appends one to a bare name, or refuses another). `example`: a name to suggest (by default
    report and the suffix, or .md)."""
    if path is None:
        return
    if path.is_dir():
        named = "is empty" if str(path) == "." else f"{path} is a folder"  # "" is the current folder
        example = example or f"report{suffix or '.md'}"
        raise InputError(f"{option} {named}: name the file to write, e.g. {example}")
    if suffix and path.suffix.lower() != suffix:
        raise InputError(f"{option} {path}: the file name must end in {suffix}")


def write_plot(option: str, path: Path, draw) -> None:
    """`draw(path)` writes a plot the user asked for; an unwritable path is one line naming the option."""
    try:
        draw(path)
    except OSError as exc:
        raise ExecutorError(f"{option}: cannot write {path}: {exc.strerror or exc}") from exc


def csv_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def pair_labels(labels: list[Path], kbs: list[str] | None) -> list[tuple[Path, str]]:
    """Each --labels file with its --kb (one name: all of them; none: the sample)."""
    kbs = kbs or ["sample"]
    if len(kbs) == 1:
        kbs = kbs * len(labels)
    if len(kbs) != len(labels):
        raise InputError(f"{len(labels)} --labels files but {len(kbs)} --kb names: give one name, or one per file")
    pairs = list(zip(labels, kbs))
    seen = set()
    for path, kb in pairs:  # the same file twice on one KB counted each question twice, and leaked across folds
        if (path.resolve(), kb) in seen:
            raise InputError(f"--labels {path} is given twice for knowledge base {kb!r}; give it once")
        seen.add((path.resolve(), kb))
    return pairs


def call_tool(rt, name: str, call, args: dict, names: dict[str, str], expand: bool = False):
    """A tool run as the graph and MCP run it (`ToolTable.answer`: its argument checks, its `tool_invocation` row,
    graph expansion when `expand` and the result calls for it), for a person at the command line: an argument
    the tool refuses is named as the command names it (`names`: the tool's field -> the user's word for it), and
    the error a call ended in is raised again, for `main` to print with its exit code."""
    from executor.tools.registry import ArgumentError

    try:
        answer = rt.tools.answer(name, call, args, expand=expand)
    except ArgumentError as exc:
        raise _named(exc, names.get(exc.field, exc.field)) from None
    if answer.out.raised is not None:
        raise answer.out.raised
    return answer


def _named(exc, name: str) -> InputError:
    if exc.kind == "blank" or (exc.kind == "string_too_short" and exc.limit == 1):
        return InputError(f"{name} is empty")
    if exc.kind == "string_too_long" and isinstance(exc.value, str):
        return InputError(f"{name} is {len(exc.value):,} characters long; the limit is {exc.limit:,}")
    return InputError(f"{name}: {exc.problem}")
