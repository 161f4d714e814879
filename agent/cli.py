"""The `executor` command line. Every command has `--json`; errors are one line on stderr, exit 2."""

from __future__ import annotations

import functools
import json
import sys
import uuid
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from agent.errors import ExecutorError

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Answers from team knowledge bases, without the retrieval loop.")
session_app = typer.Typer(no_args_is_help=True, help="Inspect or clear a session's action memory.")
app.add_typer(session_app, name="session")
console = Console()

JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON object for scripts")]
KbOpt = Annotated[str, typer.Option("--kb", help="knowledge base name")]


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


def _runtime():
    from agent.runtime import Runtime

    return Runtime()


def _print_json(data) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


@app.command()
@handles_errors
def ingest(
    path: Annotated[Optional[Path], typer.Argument(help="folder of Markdown documents (default: the bundled sample)")] = None,
    kb: KbOpt = "sample",
    rebuild: Annotated[bool, typer.Option(help="drop and re-embed everything (e.g. after changing embedder)")] = False,
    as_json: JsonOpt = False,
):
    """Load a folder of Markdown documents into a knowledge base (idempotent)."""
    from agent.settings import SAMPLE_KB_PATH
    from retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest as run_ingest

    source = path or SAMPLE_KB_PATH
    config = SAMPLE_EXTRACT_CONFIG if path is None else None
    rt = _runtime()
    try:
        report = run_ingest(rt, source, kb, rebuild=rebuild, progress=not as_json and sys.stderr.isatty(),
                            description="bundled sample knowledge base" if path is None else "", extract_config=config)
    finally:
        rt.close()
    if as_json:
        _print_json(report.to_dict())
        return
    console.print(
        f"[bold]{report.kb}[/]: {report.documents} documents ({report.added} added, {report.changed} changed, "
        f"{report.removed} removed, {report.unchanged} unchanged), {report.chunks} chunks, "
        f"{report.seconds:.1f} s, embedder {report.embedder}"
    )


@app.command()
@handles_errors
def lookup(
    query: Annotated[str, typer.Argument(help="what to look up")],
    session: Annotated[Optional[str], typer.Option(help="session id; repeat it to see action memory at work")] = None,
    kb: KbOpt = "sample",
    missing_dimension: Annotated[Optional[str], typer.Option(help="after a REFERENCE result: what was missing")] = None,
    as_json: JsonOpt = False,
):
    """Run lookup_knowledge once and print what the LLM would see."""
    rt = _runtime()
    session = session or f"cli-{uuid.uuid4().hex[:12]}"
    try:
        result = rt.lookup.lookup(query, session, kb=kb, missing_dimension=missing_dimension)
    finally:
        rt.close()
    if as_json:
        _print_json(result.model_dump(mode="json"))
        return
    console.print(f"[dim]session {session}[/]")
    typer.echo(result.to_llm_text())


@session_app.command("show")
@handles_errors
def session_show(session_id: str, as_json: JsonOpt = False):
    """Domains and documents already retrieved in a session."""
    from retrieval.lookup import check_session_id

    check_session_id(session_id)
    rt = _runtime()
    data = {
        "session": session_id,
        "domain_levels": rt.memory.domain_levels(session_id),
        "documents_by_domain": rt.memory.by_domain(session_id),
    }
    if as_json:
        _print_json(data)
        return
    if not data["domain_levels"]:
        typer.echo(f"session {session_id}: nothing retrieved yet")
    for domain, level in data["domain_levels"].items():
        typer.echo(f"{domain} (last {level}): {', '.join(data['documents_by_domain'].get(domain, [])) or '-'}")


@session_app.command("clear")
@handles_errors
def session_clear(session_id: str, as_json: JsonOpt = False):
    """Forget what a session retrieved."""
    from retrieval.lookup import check_session_id

    check_session_id(session_id)
    n = _runtime().memory.clear(session_id)
    if as_json:
        _print_json({"session": session_id, "documents_forgotten": n})
    else:
        typer.echo(f"session {session_id}: forgot {n} documents")


if __name__ == "__main__":  # pragma: no cover
    app()
