"""Knowledge bases: the `kb` commands, and `kg` (query_knowledge_graph across several)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from executor.cli.commands.common import (
    GradingOpt,
    JsonOpt,
    KbArg,
    SessionOpt,
    call_tool,
    check_grading,
    console,
    csv_list,
    echo,
    output_file,
    print_json,
    runtime,
    session_or_new,
    sub_app,
    write_text,
)
from executor.core.errors import ExecutorError, InputError, printable

kb_app = sub_app(help="Create, list, show and drop knowledge bases.")
MAX_ENTITY_TYPES = 100


@kb_app.command("create")
def kb_create(
    name: Annotated[str, typer.Argument(help="a name of lowercase letters, digits and '_', starting with a letter")],
    description: Annotated[str, typer.Option(help="what the knowledge base holds")] = "",
    entities: Annotated[str | None, typer.Option(help="entity types for its graph, e.g. Software,Database")] = None,
    relations: Annotated[
        str | None, typer.Option(help="relation types for its graph, e.g. DEPENDS_ON,RELATED_TO")
    ] = None,
    grading: GradingOpt = None,
    as_json: JsonOpt = False,
):
    """Create an empty knowledge base; with --entities/--relations it gets a graph at ingest."""
    from executor.core.validation import check_description, validate_kb_name
    from executor.retrieval.knowledge_bases import graph_config

    # a type named twice is one type (it was kept twice: "a graph of Software, Software")
    entity_types = list(dict.fromkeys(csv_list(entities)))
    if entities is not None and not entity_types:  # ",,," would otherwise make a KB without a graph, silently
        raise InputError("--entities: no entity types given; name them, e.g. Software,Database, or leave it out")
    if len(entity_types) > MAX_ENTITY_TYPES:  # each is named in every page's extraction prompt: 2,000 were taken
        raise InputError(f"--entities: {len(entity_types):,} entity types; at most {MAX_ENTITY_TYPES} are taken")
    config = graph_config(entity_types, list(dict.fromkeys(csv_list(relations))) if relations else None)
    check_grading(grading)
    # before the vector store is asked about the name (Milvus refuses a bad one in its own words), as create checks
    validate_kb_name(name)
    check_description(description)
    with runtime() as rt:
        # the vector store opened (what `_kb_info` reads) before the catalog row is written: one another process
        # holds failed the command after the row was committed, and its retry was "already exists" (hostile23 #6)
        rt.vectors.has(name)
        rt.catalog.create(name, description=description, extract_config=config, grading=grading)
        data = _kb_info(rt, name, with_graph=False)
    if as_json:
        print_json(data)
    else:
        typer.echo(f"created {name}" + (f" with a graph of {', '.join(entity_types)}" if config else " (no graph)"))


def _kb_info(rt, name: str, with_graph: bool = True) -> dict:
    from executor.retrieval.graph_build import has_graph

    row = rt.catalog.require(name)
    docs = rt.catalog.documents(name)
    info = {
        "name": row.name,
        "description": row.description,
        "extract_config": row.extract_config or {},
        "has_graph_config": has_graph(row.extract_config),
        "documents": len(docs),
        "chunks": sum(d.chunk_count for d in docs.values()),
        "domains": sorted({d.domain for d in docs.values()}),
        "embedder": row.embedder,
        "source_path": row.source_path,
        "revision": row.revision,
        "grading": rt.settings.grading_of(row.grading),
        # the KB's own model (`executor calibrate --write`): what it was fitted on and its held-out figures
        "grading_model": _model_summary(row.grading_model),
        "created_at": row.created_at.isoformat(timespec="seconds"),
    }
    # what the vector store holds, which also opens it: a damaged store is an error here (exit 1, naming the file),
    # not a listing that looks healthy over a KB that cannot answer
    info["chunks_stored"] = rt.vectors.count(name) if rt.vectors.has(name) else 0
    if with_graph and info["has_graph_config"]:
        from executor.core.errors import BackendError, EmptyGraphError
        from executor.retrieval.graph_build import graph_failure, graph_shortfall

        try:
            info["graph"] = rt.graph.stats(name)
            if shortfall := graph_shortfall(info["graph"], rt.catalog, name):
                info["graph"] = {"error": shortfall}
        except BackendError as exc:  # a lost graph of a KB whose documents name entities: damaged, not "empty"
            if isinstance(exc, EmptyGraphError) and not row.revision:
                # a KB created and never ingested: its graph is yet to be built, not lost. It was "unavailable: the
                # graph is empty ... run `executor ingest --rebuild`", as an empty home's graph server holds nothing
                info["graph"] = {"entities": 0, "documents": 0, "relations": 0}
            else:
                info["graph"] = {"error": str(graph_failure(exc, rt.catalog, name))}
        except ExecutorError as exc:
            info["graph"] = {"error": str(exc)}
    return info


def _stored_text(info: dict) -> str:
    """What the vector store holds when it is not what the catalog says (an ingest killed half-way, a store
    replaced by hand): lookups search what is stored."""
    stored = info.get("chunks_stored")
    return "" if stored is None or stored == info["chunks"] else f"; {stored} stored in the vector store"


def _model_summary(raw) -> dict | None:
    if not raw:
        return None
    if not isinstance(raw, dict):  # a damaged model: the lookup says how to mend it; here, only that it is
        return {"error": "invalid"}
    thresholds = raw.get("thresholds")
    thresholds = thresholds if isinstance(thresholds, dict) else {}
    # whether "nothing found" is its answerability model's call (fitted when the labels had off-topic questions)
    return {k: raw.get(k) for k in ("embedder", "fitted_at", "labels", "held_out")} | {
        "answerability": thresholds.get("answerability") is not None,
        "calibrated_by": raw.get("calibrated_by", "labels"),
    }


@kb_app.command("list")
def kb_list(as_json: JsonOpt = False):
    """Every knowledge base, with its size and whether it has a graph."""
    with runtime() as rt:
        rows = [_kb_info(rt, name, with_graph=False) for name in rt.catalog.names()]
    if as_json:
        print_json(rows)
        return
    if not rows:
        typer.echo("no knowledge bases yet: run `executor ingest` or `executor kb create`")
    for r in rows:
        typer.echo(
            f"{r['name']}: {r['documents']} documents{_stored_text(r)}, "
            f"{'graph' if r['has_graph_config'] else 'no graph'}"
            + (f" — {printable(r['description'])}" if r["description"] else "")
        )


@kb_app.command("show")
def kb_show(name: KbArg, as_json: JsonOpt = False):
    """One knowledge base in detail, with its graph's size."""
    with runtime() as rt:
        info = _kb_info(rt, name)
    if as_json:
        print_json(info)
        return
    _print_kb(info)


def _model_text(model: dict | None) -> str:
    if model is None:
        return ""
    if "error" in model:
        return " (its own model is invalid: refit it with `executor calibrate --write`)"
    held = model.get("held_out") or {}
    figures = ", ".join(
        f"{k} {v}"
        for k, v in held.items()
        if v is not None
        and k in ("hit_at_1", "relevant_returned", "precise_precision", "highly_relevant_precision", "off_topic_none")
    )
    labels = model.get("labels") or {}
    # the KB's own evidence (executor/retrieval/self_calibration.py): its generated questions and the bundled
    # off-topic pool
    generated = sum(n for k, n in labels.items() if k.startswith("generated from"))
    pool = sum(n for k, n in labels.items() if k == "bundled off-topic pool")
    if model.get("calibrated_by") == "self":  # no human label
        what = f"self-calibrated: {generated} generated questions, {pool} off-topic"
    else:
        what = f"{sum(labels.values()) - generated - pool} labelled questions" + (
            f" on top of {generated} generated and {pool} off-topic ones" if generated or pool else ""
        )
    return (
        f" (its own model, {model.get('embedder')}, fitted {model.get('fitted_at') or '?'} on "
        f"{what}"
        + (f"; held out {figures}" if figures else "")
        + ("; nothing found: its answerability model" if model.get("answerability") else "")
        + ")"
    )


def _print_kb(info: dict) -> None:
    from rich.table import Table

    config = info["extract_config"]
    graph = info.get("graph")
    if not info["has_graph_config"]:
        graph_text = "none (no graph config)"
    elif graph and "error" in graph:
        graph_text = f"unavailable: {graph['error']}"
    else:
        graph_text = ", ".join(f"{v} {k}" for k, v in (graph or {}).items())
    # a description (and a source path) is whatever someone set: escape sequences in it are shown, not obeyed
    table = Table(
        title=info["name"] + (f" — {printable(info['description'])}" if info["description"] else ""),
        show_header=False,
        title_justify="left",
    )
    table.add_column(style="bold")
    table.add_column()
    for key, value in (
        ("documents", f"{info['documents']} ({info['chunks']} chunks)" + _stored_text(info)),
        ("domains", ", ".join(info["domains"]) or "-"),
        ("embedder", info["embedder"] or "- (not ingested yet)"),
        ("entity types", ", ".join(config.get("entity_types") or []) or "-"),
        ("relation types", ", ".join(config.get("relation_types") or []) or "-"),
        ("graph", graph_text),
        ("grading", info["grading"] + _model_text(info["grading_model"])),
        ("source", info["source_path"] or "-"),
        ("revision", str(info["revision"])),
        ("created", info["created_at"]),
    ):
        table.add_row(key, printable(value))
    console.print(table, highlight=False, markup=False)


@kb_app.command("drop")
def kb_drop(
    name: KbArg, yes: Annotated[bool, typer.Option("--yes", help="do not ask")] = False, as_json: JsonOpt = False
):
    """Remove a knowledge base: its vectors, its graph and its catalog row."""
    from executor.retrieval.knowledge_bases import drop_knowledge_base

    with runtime() as rt:
        rt.catalog.require(name)
        if not yes and not sys.stdin.isatty():  # a script's empty stdin would read as "no", and look interrupted
            raise InputError(
                f"stdin is not a terminal, so dropping {name!r} cannot be confirmed: pass --yes to drop it"
            )
        if not yes and not typer.confirm(
            f"drop knowledge base {name!r} ({len(rt.catalog.documents(name))} documents)?"
        ):
            raise typer.Exit(1)
        drop_knowledge_base(name, rt.catalog, rt.vectors, lambda: rt.graph)
    if as_json:
        print_json({"dropped": name})
    else:
        typer.echo(f"dropped {name}")


def kg(
    query: Annotated[str, typer.Argument(help="what to look for")],
    kb: Annotated[str, typer.Option("--kb", help="comma-separated knowledge bases (at most 10)")] = "sample",
    session: SessionOpt = None,
    html: Annotated[Path | None, typer.Option("--html", help="write a page that draws graph_data")] = None,
    as_json: JsonOpt = False,
):
    """query_knowledge_graph: several knowledge bases at once, with real graph traversal."""
    from executor.agent.knowledge_graph_page import render_graph_data
    from executor.tools.call import ToolCall
    from executor.tools.registry import KG_QUERY

    output_file("--html", html, example="graph.html")
    with runtime("lookup") as rt:  # a person calling the tool directly, like `lookup`
        rt.start_loading()
        session = session_or_new(session, "kg")
        names = csv_list(kb)
        if not names:  # `--kb ','`: pydantic's "List should have at least 1 item after validation, not 0"
            raise InputError("--kb names no knowledge base: give one or more names, separated by commas")
        for name in names:  # a name typed wrong is bad input (exit 2), as for every other command; the MCP tool
            rt.catalog.require(name)  # keeps its partial results for a host that asked for several
        args = {"knowledge_base_ids": names, "query": query}
        out = call_tool(rt, KG_QUERY, ToolCall(session), args, {"knowledge_base_ids": "--kb", "query": "the query"}).out
        result = out.result
    if result.errors and not result.kb_counts:  # every knowledge base failed: that is not "no results"
        raise ExecutorError("; ".join(f"{e['knowledge_base_id']}: {e['error']}" for e in result.errors))
    data = result.model_dump(mode="json")
    if html:
        write_text(html, render_graph_data(f"{query} — {kb}", data["graph_data"], data["results"]))
    if as_json:
        print_json(data)
        return
    echo(out.text)
