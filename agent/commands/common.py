"""What every command shares: options, the runtime, JSON output, and one-line errors with exit code 2."""

from __future__ import annotations

import functools
import json
from typing import Annotated, Optional

import typer
from rich.console import Console

from agent.errors import ExecutorError, terminal_safe

console = Console()

JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object for scripts")]
KbOpt = Annotated[str, typer.Option("--kb", help="knowledge base name")]
SessionOpt = Annotated[Optional[str], typer.Option("--session", help="session id; reuse it to resume the session")]


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def handles_errors(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ExecutorError as exc:
            _fail(str(exc))
        except KeyboardInterrupt:
            _fail("interrupted")

    return wrapper


def echo(text: str, **kwargs) -> None:
    """Print text that may come from documents: escape sequences in it (OSC, CSI) are shown, not obeyed."""
    typer.echo(terminal_safe(text), **kwargs)


def runtime():
    from agent.runtime import Runtime

    return Runtime()


def print_json(data) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def csv_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]
