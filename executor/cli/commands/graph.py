"""The `graph` commands: neighbours, paths, a drawing, and stopping the embedded server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from executor.cli.commands.common import JsonOpt, KbOpt, csv_list, echo, print_json, runtime, sub_app, write_text
from executor.core.errors import BackendError, InputError
from executor.retrieval.extraction import entity_named

graph_app = sub_app(help="Explore a knowledge base's graph.")

HopsOpt = Annotated[int, typer.Option("--hops", help="how many relations deep (1-4)")]
EntityArg = Annotated[
    str, typer.Argument(help="an entity name (a product, error code, concept ...); case does not matter")
]
RelationsOpt = Annotated[
    str | None, typer.Option("--relations", help="comma-separated relation types, e.g. DEPENDS_ON,RELATED_TO")
]


def _graph_runtime(kb: str):
    from executor.retrieval.graph_build import require_graph

    rt = runtime()
    try:
        require_graph(rt.catalog, kb, rt.catalog.require(kb), "the graph commands need")
    except BaseException:
        rt.close()
        raise
    return rt


@contextmanager
def _entities_of(rt, kb: str) -> Iterator[None]:
    """An entity not found in a backend that holds none of the KB's graph is that absence, not "no entity"."""
    from executor.retrieval.graph_build import graph_absent

    try:
        yield
    except InputError as exc:
        if absent := graph_absent(rt.graph, rt.catalog, kb):
            raise BackendError(absent) from exc
        raise


def relation_filter(relations: str | None) -> list[str]:
    """--relations as a list; one that names nothing (`""`, `",,,"`) is refused, as `--entities` and `--source` are:
    it meant every relation type, silently (hostile19 finding 13)."""
    names = csv_list(relations)
    if relations is not None and not names:
        raise InputError("--relations names no relation type; give e.g. DEPENDS_ON,RELATED_TO, or leave it out for all")
    return names


@graph_app.command("neighbors")
def graph_neighbors(
    entity: EntityArg,
    kb: KbOpt = "sample",
    hops: HopsOpt = 2,
    relations: RelationsOpt = None,
    max_paths: Annotated[int, typer.Option(help="at most this many paths")] = 30,
    as_json: JsonOpt = False,
):
    """Paths from ENTITY to what surrounds it, best first (score = product of edge weights)."""
    wanted = relation_filter(relations)  # before any graph work
    with _graph_runtime(kb) as rt, _entities_of(rt, kb):
        paths = rt.graph.navigate(
            kb, entity_named(rt.graph, kb, entity), hops, wanted, max_paths, rt.settings.graph_max_nodes_per_hop
        )
    if as_json:
        print_json({"entity": entity, "kb": kb, "paths": [p.model_dump() for p in paths]})
        return
    if not paths:
        typer.echo(f"{entity}: no neighbours within {hops} hops")
    for p in paths:
        echo(f"{p.score:.3f}  {p.summary()}")


@graph_app.command("path")
def graph_path(
    source: Annotated[str, typer.Argument(help="the entity to start from")],
    target: Annotated[str, typer.Argument(help="the entity to reach")],
    kb: KbOpt = "sample",
    hops: HopsOpt = 3,
    relations: RelationsOpt = None,
    max_paths: Annotated[int, typer.Option(help="at most this many paths")] = 5,
    as_json: JsonOpt = False,
):
    """Paths between two entities, best first; says so when there are none."""
    wanted = relation_filter(relations)  # before any graph work
    with _graph_runtime(kb) as rt, _entities_of(rt, kb):
        found = rt.graph.navigate_between(
            kb, entity_named(rt.graph, kb, source), entity_named(rt.graph, kb, target), hops, wanted, max_paths
        )
    if as_json:
        print_json(found.model_dump())
        return
    if not found.reachable:
        typer.echo(found.summary(hops))
    for p in found.paths:
        echo(f"{p.score:.3f}  {p.summary()}")


@graph_app.command("show")
def graph_show(
    entity: EntityArg,
    html: Annotated[Path, typer.Option("--html", help="write the page here")],
    kb: KbOpt = "sample",
    hops: HopsOpt = 2,
    relations: RelationsOpt = None,
):
    """Draw ENTITY's neighbourhood as a self-contained HTML page."""
    from executor.agent.knowledge_graph_page import render
    from executor.stores.knowledge_graph import require_entity

    wanted = relation_filter(relations)  # before any graph work
    if html.is_dir():  # "" is the current folder: known before any graph work
        named = "is empty" if str(html) == "." else f"{html} is a folder"
        raise InputError(f"--html {named}: name the page's file, e.g. graph.html")
    with _graph_runtime(kb) as rt, _entities_of(rt, kb):
        entity = entity_named(rt.graph, kb, entity)
        node = require_entity(rt.graph, kb, entity)
        paths = rt.graph.navigate(kb, entity, hops, wanted, 60, rt.settings.graph_max_nodes_per_hop)
    write_text(html, render(f"{node.name} — {kb}", node.name, paths))
    typer.echo(f"wrote {html} ({len(paths)} paths)")


@graph_app.command("stop")
def graph_stop(as_json: JsonOpt = False):
    """Stop the embedded FalkorDB server of this EXECUTOR_HOME (it starts again on demand)."""
    with runtime() as rt:
        stopped = rt.graph_server.stop()
    if as_json:
        print_json({"stopped": stopped})
    else:
        typer.echo("stopped the embedded FalkorDB" if stopped else "the embedded FalkorDB was not running")
