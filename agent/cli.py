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
graph_app = typer.Typer(no_args_is_help=True, help="Explore a knowledge base's graph.")
app.add_typer(graph_app, name="graph")
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
    graph: Annotated[bool, typer.Option(help="expand a REFERENCE or thin result through the knowledge graph")] = True,
    as_json: JsonOpt = False,
):
    """Run lookup_knowledge once (and graph_expand when it applies) and print what the LLM would see."""
    from retrieval.expansion import should_expand

    rt = _runtime()
    session = session or f"cli-{uuid.uuid4().hex[:12]}"
    try:
        result = rt.lookup.lookup(query, session, kb=kb, missing_dimension=missing_dimension)
        expansion = None
        if graph and should_expand(result, rt.settings.graph_min_results):
            expansion = rt.expander.expand(result)
    finally:
        rt.close()
    if as_json:
        data = result.model_dump(mode="json")
        data["graph_expansion"] = expansion.model_dump(mode="json") if expansion else None
        _print_json(data)
        return
    console.print(f"[dim]session {session}[/]")
    typer.echo(result.to_llm_text())
    if expansion is not None:
        typer.echo("\n" + expansion.to_llm_text())


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


HopsOpt = Annotated[int, typer.Option("--hops", help="how many relations deep (1-4)")]
RelationsOpt = Annotated[Optional[str], typer.Option("--relations", help="comma-separated relation types, e.g. DEPENDS_ON,RELATED_TO")]


def _relations(value: str | None) -> list[str] | None:
    return [r for r in value.split(",") if r.strip()] if value else None


def _graph_runtime(kb: str):
    from retrieval.graph_build import has_graph

    rt = _runtime()
    row = rt.catalog.require(kb)
    if not has_graph(row.extract_config):
        raise ExecutorError(f"knowledge base {kb!r} has no graph config")
    return rt


@graph_app.command("neighbors")
@handles_errors
def graph_neighbors(
    entity: str,
    kb: KbOpt = "sample",
    hops: HopsOpt = 2,
    relations: RelationsOpt = None,
    max_paths: Annotated[int, typer.Option(help="at most this many paths")] = 30,
    as_json: JsonOpt = False,
):
    """Paths from ENTITY to what surrounds it, best first (score = product of edge weights)."""
    rt = _graph_runtime(kb)
    try:
        paths = rt.graph.navigate(kb, entity, hops, _relations(relations), max_paths, rt.settings.graph_max_nodes_per_hop)
    finally:
        rt.close()
    if as_json:
        _print_json({"entity": entity, "kb": kb, "paths": [p.model_dump() for p in paths]})
        return
    if not paths:
        typer.echo(f"{entity}: no neighbours within {hops} hops")
    for p in paths:
        typer.echo(f"{p.score:.3f}  {p.summary()}")


@graph_app.command("path")
@handles_errors
def graph_path(
    source: str,
    target: str,
    kb: KbOpt = "sample",
    hops: HopsOpt = 3,
    relations: RelationsOpt = None,
    max_paths: Annotated[int, typer.Option(help="at most this many paths")] = 5,
    as_json: JsonOpt = False,
):
    """Paths between two entities, best first; says so when there are none."""
    rt = _graph_runtime(kb)
    try:
        found = rt.graph.navigate_between(kb, source, target, hops, _relations(relations), max_paths)
    finally:
        rt.close()
    if as_json:
        _print_json(found.model_dump())
        return
    if not found.reachable:
        typer.echo(f"{found.source} and {found.target} are not connected within {hops} hops")
    for p in found.paths:
        typer.echo(f"{p.score:.3f}  {p.summary()}")


@graph_app.command("show")
@handles_errors
def graph_show(
    entity: str,
    html: Annotated[Path, typer.Option("--html", help="write the page here")],
    kb: KbOpt = "sample",
    hops: HopsOpt = 2,
    relations: RelationsOpt = None,
):
    """Draw ENTITY's neighbourhood as a self-contained HTML page."""
    from agent.graph_page import render

    rt = _graph_runtime(kb)
    try:
        node = rt.graph.require_entity(kb, entity)
        paths = rt.graph.navigate(kb, entity, hops, _relations(relations), 60, rt.settings.graph_max_nodes_per_hop)
    finally:
        rt.close()
    try:
        html.write_text(render(f"{node.name} — {kb}", node.name, paths), encoding="utf-8")
    except OSError as exc:
        raise ExecutorError(f"cannot write {html}: {exc.strerror}") from exc
    typer.echo(f"wrote {html} ({len(paths)} paths)")


@graph_app.command("stop")
@handles_errors
def graph_stop():
    """Stop the embedded FalkorDB server of this EXECUTOR_HOME (it starts again on demand)."""
    stopped = _runtime().graph_server.stop()
    typer.echo("stopped the embedded FalkorDB" if stopped else "the embedded FalkorDB was not running")


if __name__ == "__main__":  # pragma: no cover
    app()
