"""Loading and looking up: `ingest`, `lookup`, and the `session` commands."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Annotated

import typer

from executor.cli.commands.common import (
    GradingOpt,
    JsonOpt,
    KbOpt,
    SessionArg,
    call_tool,
    check_grading,
    console,
    echo,
    print_json,
    runtime,
    session_or_new,
    sub_app,
    warn_damaged_graph,
)

session_app = sub_app(help="Inspect or clear a session's action memory.")


def _terminated(_signum, _frame) -> None:
    from executor.core.errors import Terminated

    raise Terminated


def _folder(value: str) -> Path:
    """The folder to ingest. Typer reads '' as '.', so a script's `"$DOCS"` with DOCS unset replaced the KB with the
    folder the script ran in: refused, as every empty path the commands take is."""
    if not value:
        from executor.core.errors import InputError

        raise InputError("the folder is empty: name the folder to ingest, or leave it out for the bundled sample")
    return Path(value)


def ingest(
    path: Annotated[
        Path | None,
        typer.Argument(parser=_folder, help="folder of documents (default: the bundled sample)"),
    ] = None,
    kb: KbOpt = "sample",
    rebuild: Annotated[bool, typer.Option(help="drop and re-embed everything (e.g. after changing embedder)")] = False,
    llm_extract: Annotated[
        bool, typer.Option(help="also extract entities with the LLM, when one is configured")
    ] = True,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="list what would be read, converted or skipped; write nothing")
    ] = False,
    grading: GradingOpt = None,
    as_json: JsonOpt = False,
):
    """Load a folder of documents (.md/.mdx/.txt/.html/.pdf/.docx/.pptx/.xlsx) into a knowledge base, and build its
    graph (idempotent)."""
    from executor.core.settings import SAMPLE_KB_PATH
    from executor.retrieval.ingest import SAMPLE_EXTRACT_CONFIG
    from executor.retrieval.ingest import ingest as run_ingest

    source = path or SAMPLE_KB_PATH
    config = SAMPLE_EXTRACT_CONFIG if path is None else None
    check_grading(grading)
    if dry_run:
        _print_plan(source, kb, as_json)
        return
    # SIGTERM stops an ingest as Ctrl-C does, saying so (it ended silently with 143): a rebuild keeps the old KB
    signal.signal(signal.SIGTERM, _terminated)
    with runtime(serve_model=llm_extract) as rt:
        extractor = _llm_extractor(rt, kb, config) if llm_extract else None
        report = run_ingest(
            rt,
            source,
            kb,
            rebuild=rebuild,
            progress=sys.stderr.isatty(),  # on stderr: --json's stdout stays the JSON
            description="bundled sample knowledge base" if path is None else "",
            extract_config=config,
            llm_extractor=extractor,
            grading=grading,
        )
    # the vectors are stored and answer lookups, but a KB whose graph backend failed is not what was asked for
    from executor.core.errors import BackendError

    failed = (
        BackendError(
            f"{report.kb}: its documents are stored, but its graph was not built ({report.graph_error}); run "
            "`executor ingest` again once the graph backend answers"
        )
        if report.graph_error
        else None
    )
    if as_json:
        print_json(report.to_dict())
        if failed is not None:
            raise failed
        return
    for warning in report.warnings:
        if failed is None or not warning.startswith("graph not built:"):  # that one is the error line, once
            console.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    graph = report.graph
    formats = ", ".join(f"{fmt} {n}" for fmt, n in sorted(report.formats.items()))
    console.print(
        f"[bold]{report.kb}[/]: {report.documents} documents ({report.added} added, {report.changed} changed, "
        f"{report.removed} removed, {report.unchanged} unchanged; {formats}"
        + (f"; {report.skipped} skipped" if report.skipped else "")
        + f"), {report.chunks} chunks, {report.seconds:.1f} s, embedder {report.embedder}"
        + (
            f"; graph: {graph['entities']} entities, {graph['relations']} relations"
            if graph
            else "; graph not built"
            if failed
            else "; no graph config"
        )
    )
    calibration = report.calibration
    if calibration is not None:
        held = calibration["held_out"]
        console.print(
            f"grading: self-calibrated on {calibration['generated']} generated questions and "
            f"{calibration['off_topic']} "
            f"off-topic ones in {calibration['seconds']:.1f} s"
            + (
                f" (held out: hit@1 {held.get('hit_at_1')}, off-topic nothing found {held.get('off_topic_none')})"
                if calibration["stored"]
                else f"; not stored: {calibration['skipped']}, the shared preset grades it"
            ),
            highlight=False,
            markup=False,
        )
    if failed is not None:
        raise failed


def _print_plan(source: Path, kb: str, as_json: bool) -> None:
    """`ingest --dry-run`: the file walk, so no file is opened, converted or written; and what the ingest would
    remove from the KB, from its catalog (read, not written)."""
    from executor.core.settings import get_settings
    from executor.core.validation import validate_kb_name
    from executor.retrieval.ingest import source_limits
    from executor.retrieval.sources import plan

    validate_kb_name(kb)
    settings = get_settings()
    data = {"kb": kb, **plan(source, source_limits(settings))}
    removal = _removal(settings, kb, data["root"], {f["doc_key"] for f in data["files"]})
    data["remove"] = removal.documents
    data["warnings"] = [removal.warning(kb, data["root"], done=False)] if removal.other_folder else []
    if as_json:
        print_json(data)
        return
    for f in data["files"]:
        typer.echo(f"{f['action']:<8} {f['doc_key']} ({f['format']}, {f['bytes']:,} bytes)")
    for s in data["skipped"]:
        typer.echo(f"skip     {s['name']}: {s['reason']}")
    for key in data["remove"]:
        typer.echo(f"remove   {key} (in the KB, not in this folder)")
    for warning in data["warnings"]:
        console.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    counts = data["counts"]
    formats = ", ".join(f"{fmt} {n}" for fmt, n in data["formats"].items()) or "none"
    from executor.retrieval.sources import most_common_types

    unsupported = most_common_types(data["unsupported"])
    typer.echo(
        f"dry run for {kb}: {counts['read']} to read, {counts['convert']} to convert, {counts['skipped']} skipped"
        + (f", {counts['unsupported']} unsupported ({unsupported})" if unsupported else "")
        + (f", {len(data['remove'])} to remove" if data["remove"] else "")
        + f"; per format: {formats}; nothing written"
    )


def _removal(settings, kb: str, root: str, found: set[str]):
    """What an ingest of `root` would remove from the KB, by the ingest's own rule (nothing fails to load in a dry
    run: nothing is read)."""
    from executor.retrieval.ingest import Removal

    url = settings.db_url
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        return Removal([], None)  # no database, no KB: opening one would create it, and a dry run writes nothing
    with runtime() as rt:
        return Removal.of(rt.catalog, kb, root, found)


def _llm_extractor(rt, kb: str, config: dict | None):
    """An LLM extractor for this KB's types, if an LLM is configured and the KB has a graph config."""
    from executor.retrieval.graph_build import has_graph

    row = rt.catalog.get(kb)
    config = row.extract_config if row is not None else (config or {})
    if not (rt.settings.llm_configured and has_graph(config)):
        return None
    from executor.retrieval.llm_extraction import LLMExtractor

    model, _ = rt.chat_model
    return LLMExtractor(model, rt.settings.model, config.get("entity_types") or [], config.get("relation_types") or [])


# lookup_knowledge's fields as `executor lookup` names them, in its error lines
LOOKUP_NAMES = {"query": "the query", "missing_dimension": "the missing dimension (--missing-dimension)"}


def lookup(
    query: Annotated[str, typer.Argument(help="what to look up")],
    session: Annotated[str | None, typer.Option(help="session id; repeat it to see action memory at work")] = None,
    kb: KbOpt = "sample",
    missing_dimension: Annotated[str | None, typer.Option(help="after a REFERENCE result: what was missing")] = None,
    graph: Annotated[bool, typer.Option(help="expand a REFERENCE or thin result through the knowledge graph")] = True,
    as_json: JsonOpt = False,
):
    """Run lookup_knowledge once (and graph_expand when it applies) and print what the LLM would see."""
    from executor.tools.call import ToolCall
    from executor.tools.registry import LOOKUP

    with runtime("lookup") as rt:
        rt.start_loading(segmenter=not query.isascii())  # only non-ASCII text is cut by jieba
        session = session_or_new(session, "cli")
        # widened as the graph's graph_expand node would: a REFERENCE or thin result, in a KB with a graph
        args = {"query": query, "missing_dimension": missing_dimension}
        answer = call_tool(rt, LOOKUP, ToolCall(session, kb), args, LOOKUP_NAMES, expand=graph)
        out, expansion = answer.out, answer.expansion
    warn_damaged_graph([expansion.damaged] if expansion else [])
    if as_json:
        data = out.result.model_dump(mode="json")
        # nothing found has no level inside (None); a script reads it as the text, the trace and `stats` name it
        data["relevance_level"] = out.result.relevance_level or "NONE"
        data["graph_expansion"] = expansion.model_dump(mode="json") if expansion else None
        print_json(data)
        return
    console.print(f"[dim]session {session}[/]")
    echo(answer.text)


@session_app.command("show")
def session_show(session_id: SessionArg, as_json: JsonOpt = False):
    """Domains, documents and lookups a session already has (what the repeat rule compares with)."""
    from executor.core.validation import check_session_id

    check_session_id(session_id)
    with runtime() as rt:
        data = {
            "session": session_id,
            "domain_levels": rt.memory.domain_levels(session_id),
            "documents_by_domain": rt.memory.by_domain(session_id),
            "lookups": [
                {"query": e.query, "level": e.level or "NONE", "domain": e.domain, "documents": e.doc_keys}
                for e in rt.memory.lookups(session_id)
            ],
        }
    if as_json:
        print_json(data)
        return
    levels, docs = data["domain_levels"], data["documents_by_domain"]
    if not levels and not docs and not data["lookups"]:
        typer.echo(f"session {session_id}: nothing retrieved yet")
        return
    from rich.table import Table

    # documents found by graph expansion or query_knowledge_graph have a domain but no graded lookup there
    table = Table(title=f"session {session_id}", title_justify="left")
    for col in ("domain", "last lookup there", "documents sent"):
        table.add_column(col)
    for domain in [*levels, *(d for d in docs if d not in levels)]:
        table.add_row(domain, levels.get(domain, "- (no lookup landed here)"), "\n".join(docs.get(domain, [])) or "-")
    if levels or docs:
        console.print(table, highlight=False)
    for e in data["lookups"]:
        echo(f"  looked up {e['query']!r}: {e['level']}")


@session_app.command("clear")
def session_clear(session_id: SessionArg, as_json: JsonOpt = False):
    """Forget what a session retrieved, and its conversation."""
    from executor.agent.session import clear_session
    from executor.core.validation import check_session_id

    check_session_id(session_id)  # before any store is opened
    with runtime() as rt, rt.checkpoints() as saver:
        n = clear_session(session_id, saver, rt.memory)
    if as_json:
        print_json({"session": session_id, "documents_forgotten": n})
    else:
        typer.echo(f"session {session_id}: forgot {n} documents")
