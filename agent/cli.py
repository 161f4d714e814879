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
kb_app = typer.Typer(no_args_is_help=True, help="Create, list, show and drop knowledge bases.")
app.add_typer(kb_app, name="kb")
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
    llm_extract: Annotated[bool, typer.Option(help="also extract entities with the LLM, when one is configured")] = True,
    as_json: JsonOpt = False,
):
    """Load a folder of Markdown documents into a knowledge base, and build its graph (idempotent)."""
    from agent.settings import SAMPLE_KB_PATH
    from retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest as run_ingest

    source = path or SAMPLE_KB_PATH
    config = SAMPLE_EXTRACT_CONFIG if path is None else None
    rt = _runtime()
    try:
        extractor = _llm_extractor(rt, kb, config) if llm_extract else None
        report = run_ingest(rt, source, kb, rebuild=rebuild, progress=not as_json and sys.stderr.isatty(),
                            description="bundled sample knowledge base" if path is None else "", extract_config=config,
                            llm_extractor=extractor)
    finally:
        rt.close()
    if as_json:
        _print_json(report.to_dict())
        return
    for warning in report.warnings:
        console.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    graph = report.graph
    console.print(
        f"[bold]{report.kb}[/]: {report.documents} documents ({report.added} added, {report.changed} changed, "
        f"{report.removed} removed, {report.unchanged} unchanged), {report.chunks} chunks, "
        f"{report.seconds:.1f} s, embedder {report.embedder}"
        + (f"; graph: {graph['entities']} entities, {graph['relations']} relations" if graph else "; no graph config")
    )


def _llm_extractor(rt, kb: str, config: dict | None):
    """An LLM extractor for this KB's types, if an LLM is configured and the KB has a graph config."""
    from retrieval.graph_build import has_graph

    row = rt.catalog.get(kb)
    config = row.extract_config if row is not None else (config or {})
    if not (rt.settings.llm_configured and has_graph(config)):
        return None
    from agent.llm import make_chat_model
    from retrieval.llm_extraction import LLMExtractor

    model, _ = make_chat_model(rt.settings)
    return LLMExtractor(model, rt.settings.model, config.get("entity_types") or [], config.get("relation_types") or [])


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
    """Forget what a session retrieved, and its conversation."""
    from retrieval.lookup import check_session_id

    from agent.checkpoints import open_checkpointer

    check_session_id(session_id)
    rt = _runtime()
    n = rt.memory.clear(session_id)
    with open_checkpointer(rt.settings) as saver:
        saver.delete_thread(session_id)  # the conversation goes with the memory
    if as_json:
        _print_json({"session": session_id, "documents_forgotten": n})
    else:
        typer.echo(f"session {session_id}: forgot {n} documents")


SessionOpt = Annotated[Optional[str], typer.Option("--session", help="session id; reuse it to resume the session")]


def _trace_line(entry: dict) -> str:
    what = f"{entry['tool']}({entry.get('query')!r}" + (
        f", missing_dimension={entry['missing_dimension']!r})" if entry.get("missing_dimension") else ")"
    )
    if entry.get("error"):
        return f"  ✗ {what}: {entry['error']}"
    if entry.get("blocked"):
        return f"  ⊘ {what} blocked: {entry.get('dedup_reason')}"
    graph = f", graph {entry['graph']}" if entry.get("graph") else ""
    level = entry.get("relevance_level")
    return f"  → {what} → {level}{graph}" if level else f"  → {what}"


class _LiveTrace:
    """Prints each tool call once, as soon as the graph has decided about it."""

    def __init__(self):
        self.shown: set[int] = set()

    def __call__(self, node: str, update: dict) -> None:
        if node not in ("guard", "lookup", "graph_expand"):
            return
        for i, entry in enumerate(update.get("trace", [])):
            settled = entry.get("blocked") or entry.get("relevance_level") or entry.get("error") or entry["tool"] != "lookup_knowledge"
            if node == "lookup" and entry["tool"] == "lookup_knowledge" and update.get("pending_expansions"):
                settled = settled and not any(p["trace_index"] == i for p in update["pending_expansions"])
            if settled and i not in self.shown:
                self.shown.add(i)
                console.print(_trace_line(entry), style="dim", highlight=False, markup=False)


def _agent_turns(kb: str):
    """(run(question, session, ...), mode, closer) over one runtime, model and checkpointer."""
    from contextlib import ExitStack

    from agent.checkpoints import open_checkpointer
    from agent.graph import build_graph
    from agent.llm import make_chat_model
    from agent.session import run_turn
    from agent.state import Context

    rt = _runtime()
    stack = ExitStack()
    stack.callback(rt.close)
    rt.catalog.require(kb)
    model, mode = make_chat_model(rt.settings)
    app = build_graph(rt, model, mode, checkpointer=stack.enter_context(open_checkpointer(rt.settings)))
    context = Context(kb=kb, lookup_budget=rt.settings.lookup_budget)

    def run(question: str, session: str, **callbacks):
        return run_turn(app, question, session, context, mode, max_query_chars=rt.settings.max_query_chars, **callbacks)

    return run, mode, stack


@app.command()
@handles_errors
def ask(
    question: Annotated[str, typer.Argument(help="the question")],
    session: SessionOpt = None,
    kb: KbOpt = "sample",
    as_json: JsonOpt = False,
):
    """Answer one question through the executor graph (LLM if configured, else offline)."""
    session = session or f"ask-{uuid.uuid4().hex[:12]}"
    run, mode, stack = _agent_turns(kb)
    with stack:
        result = run(question, session, on_update=None if as_json else _LiveTrace())
    if as_json:
        _print_json(result.model_dump())
        return
    typer.echo(result.answer)
    _print_sources(result)


def _print_sources(result) -> None:
    if result.citations:
        console.print("sources: " + ", ".join(f"{c['title']} [{c['doc_key']}]" for c in result.citations), style="dim", highlight=False, markup=False)
    console.print(
        f"session {result.session} · {result.mode} · {result.executed_lookups} lookups run, "
        f"{result.blocked_lookups} blocked", style="dim", highlight=False, markup=False,
    )


@app.command()
@handles_errors
def chat(session: SessionOpt = None, kb: KbOpt = "sample"):
    """Chat with the executor; each tool call shows live with its level, or why it was blocked."""
    session = session or f"chat-{uuid.uuid4().hex[:12]}"
    run, mode, stack = _agent_turns(kb)
    with stack:
        console.print(f"[dim]session {session} · {mode} mode · knowledge base {kb} · empty line or Ctrl-D to quit[/]")
        while True:
            try:
                question = input("you> ").strip()
            except EOFError:
                break
            if not question or question in ("exit", "quit"):
                break
            streamed: list[str] = []

            def token(text: str) -> None:
                if not streamed:
                    typer.echo("executor> ", nl=False)
                streamed.append(text)
                typer.echo(text, nl=False)

            try:
                result = run(question, session, on_update=_LiveTrace(), on_token=token)
            except ExecutorError as exc:
                typer.echo(f"error: {exc}", err=True)
                continue
            typer.echo("" if streamed else f"executor> {result.answer}")
            _print_sources(result)


@app.command("eval")
@handles_errors
def eval_(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="scenario files or folders (default: evals/scenarios)")] = None,
    policy: Annotated[str, typer.Option(help="scripted: replay the proposals; llm: ask the configured model")] = "scripted",
    guards: Annotated[str, typer.Option(help="on: the code rules; off: the same graph without them (baseline)")] = "on",
    json_out: Annotated[Optional[Path], typer.Option("--json", help="write the results here")] = None,
    markdown: Annotated[Optional[Path], typer.Option("--markdown", help="write the guards off/on report here")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="write a PNG of lookups per scenario, off vs on")] = None,
):
    """Replay the ISS-002 scenarios; exit code 1 when any scenario's expectation fails."""
    from agent.settings import REPO_ROOT
    from evals import report
    from evals.runner import aggregate, run_suite
    from evals.scenarios_model import load_scenarios

    if policy not in ("scripted", "llm") or guards not in ("on", "off"):
        raise ExecutorError("--policy is scripted or llm, --guards is on or off")
    scenarios = load_scenarios(paths or [REPO_ROOT / "evals" / "scenarios"])
    rt = _runtime()
    try:
        for kb in sorted({s.kb for s in scenarios}):
            rt.catalog.require(kb)
        model = None
        if policy == "llm":
            if not rt.settings.llm_configured:
                raise ExecutorError("--policy llm needs OPENAI_API_KEY or OPENAI_BASE_URL")
            from agent.llm import make_chat_model

            model, _ = make_chat_model(rt.settings)
        show = sys.stderr.isatty()
        judged = run_suite(rt, scenarios, guards == "on", policy, model, progress=show)
        baseline = run_suite(rt, scenarios, guards != "on", policy, model, progress=show)
    finally:
        rt.close()
    on, off = (judged, baseline) if guards == "on" else (baseline, judged)
    if json_out:
        report.write_json(report.to_json(judged, baseline, policy), json_out)
    if markdown:
        markdown.write_text(report.markdown(on, off, policy), encoding="utf-8")
    if plot:
        report.plot(on, off, plot)
    agg = aggregate(judged)
    for r in judged:
        if not r.passed:
            console.print(f"FAIL {r.id}: {'; '.join(r.failures)}", style="red", highlight=False, markup=False)
    console.print(
        f"{agg['scenarios_passed']}/{agg['scenarios']} scenarios pass (guards {guards}, {policy}); "
        f"mean lookups executed {agg['mean_executed_lookups']} (storms {agg['mean_executed_lookups_storms']}), "
        f"duplicate documents sent {agg['duplicate_docs_sent']}, citation recall {agg['citation_recall']}; "
        f"baseline (guards {'off' if guards == 'on' else 'on'}): mean lookups executed "
        f"{aggregate(baseline)['mean_executed_lookups']}",
        highlight=False, markup=False,
    )
    if agg["scenarios_failed"]:
        raise typer.Exit(1)


def _csv(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


@kb_app.command("create")
@handles_errors
def kb_create(
    name: str,
    description: Annotated[str, typer.Option(help="what the knowledge base holds")] = "",
    entities: Annotated[Optional[str], typer.Option(help="entity types for its graph, e.g. Software,Database")] = None,
    relations: Annotated[Optional[str], typer.Option(help="relation types for its graph, e.g. DEPENDS_ON,RELATED_TO")] = None,
    as_json: JsonOpt = False,
):
    """Create an empty knowledge base; with --entities/--relations it gets a graph at ingest."""
    from stores.graph import relation_pattern

    relation_types = relation_pattern(_csv(relations)).split("|") if relations else []
    entity_types = _csv(entities)
    if any(not t.replace("_", "").isalnum() or len(t) > 40 for t in entity_types):
        raise ExecutorError("entity types are names of letters, digits and '_' (at most 40 characters)")
    if relation_types and not entity_types:
        raise ExecutorError("a graph config needs --entities as well as --relations")
    config = {"entity_types": entity_types, "relation_types": relation_types} if entity_types else {}
    rt = _runtime()
    rt.catalog.create(name, description=description, extract_config=config)
    data = _kb_info(rt, name, with_graph=False)
    if as_json:
        _print_json(data)
    else:
        typer.echo(f"created {name}" + (f" with a graph of {', '.join(entity_types)}" if config else " (no graph)"))


def _kb_info(rt, name: str, with_graph: bool = True) -> dict:
    from retrieval.graph_build import has_graph

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
        "created_at": row.created_at.isoformat(timespec="seconds"),
    }
    if with_graph and info["has_graph_config"]:
        try:
            info["graph"] = rt.graph.stats(name)
        except ExecutorError as exc:
            info["graph"] = {"error": str(exc)}
    return info


@kb_app.command("list")
@handles_errors
def kb_list(as_json: JsonOpt = False):
    """Every knowledge base, with its size and whether it has a graph."""
    rt = _runtime()
    rows = [_kb_info(rt, name, with_graph=False) for name in rt.catalog.names()]
    if as_json:
        _print_json(rows)
        return
    if not rows:
        typer.echo("no knowledge bases yet: run `executor ingest` or `executor kb create`")
    for r in rows:
        typer.echo(f"{r['name']}: {r['documents']} documents, {'graph' if r['has_graph_config'] else 'no graph'}"
                   + (f" — {r['description']}" if r["description"] else ""))


@kb_app.command("show")
@handles_errors
def kb_show(name: str, as_json: JsonOpt = False):
    """One knowledge base in detail, with its graph's size."""
    rt = _runtime()
    try:
        info = _kb_info(rt, name)
    finally:
        rt.close()
    if as_json:
        _print_json(info)
        return
    for key, value in info.items():
        typer.echo(f"{key}: {value}")


@kb_app.command("drop")
@handles_errors
def kb_drop(name: str, yes: Annotated[bool, typer.Option("--yes", help="do not ask")] = False, as_json: JsonOpt = False):
    """Remove a knowledge base: its vectors, its graph and its catalog row."""
    from retrieval.graph_build import has_graph

    rt = _runtime()
    try:
        row = rt.catalog.require(name)
        if not yes and not typer.confirm(f"drop knowledge base {name!r} ({len(rt.catalog.documents(name))} documents)?"):
            raise typer.Exit(1)
        # the catalog row goes last: if a step fails, the KB is still listed and the drop can be repeated
        if has_graph(row.extract_config):
            rt.graph.drop_kb(name)
        rt.vectors.drop(name)
        rt.catalog.drop(name)
    finally:
        rt.close()
    if as_json:
        _print_json({"dropped": name})
    else:
        typer.echo(f"dropped {name}")


@app.command()
@handles_errors
def kg(
    query: Annotated[str, typer.Argument(help="what to look for")],
    kb: Annotated[str, typer.Option("--kb", help="comma-separated knowledge bases (at most 10)")] = "sample",
    session: SessionOpt = None,
    html: Annotated[Optional[Path], typer.Option("--html", help="write a page that draws graph_data")] = None,
    as_json: JsonOpt = False,
):
    """query_knowledge_graph: several knowledge bases at once, with real graph traversal."""
    from agent.graph_page import render_graph_data

    rt = _runtime()
    session = session or f"kg-{uuid.uuid4().hex[:12]}"
    try:
        result = rt.kg.query(_csv(kb) or [kb], query, session)
    finally:
        rt.close()
    data = result.model_dump(mode="json")
    if html:
        try:
            html.write_text(render_graph_data(f"{query} — {kb}", data["graph_data"], data["results"]), encoding="utf-8")
        except OSError as exc:
            raise ExecutorError(f"cannot write {html}: {exc.strerror}") from exc
    if as_json:
        _print_json(data)
        return
    typer.echo(result.to_llm_text())


@app.command()
@handles_errors
def stats(
    session: SessionOpt = None,
    since: Annotated[Optional[str], typer.Option(help="only lookups from this date on (YYYY-MM-DD or ISO time)")] = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="write a PNG with the four panels")] = None,
    as_json: JsonOpt = False,
):
    """Relevance levels, dedup reasons, similarities and lookups per session, from the invocation log."""
    from datetime import datetime

    from retrieval.lookup import check_session_id
    from stores.invocation_stats import invocation_stats, plot_stats

    if session:
        check_session_id(session)
    try:
        start = datetime.fromisoformat(since) if since else None
    except ValueError:
        raise ExecutorError(f"--since {since!r} is not a date (YYYY-MM-DD) or an ISO time") from None
    data = invocation_stats(_runtime().db, session=session, since=start)
    if plot:
        plot_stats(data, plot)
    if as_json:
        _print_json(data)
        return
    typer.echo(f"{data['lookups']} lookups in {data['sessions']} sessions ({data['errors']} errors); "
               f"at most {data['max_lookups_in_a_session']} in one session, median {data['median_lookups_per_session']}")
    typer.echo("levels: " + ", ".join(f"{k} {v}" for k, v in data["relevance_levels"].items()))
    typer.echo("dedup:  " + (", ".join(f"{k} {v}" for k, v in data["dedup_reasons"].items()) or "-"))
    hist = data["similarity_histogram"]
    peak = max(hist["counts"]) or 1
    for lo, n in zip(hist["bins"], hist["counts"]):
        typer.echo(f"  {lo:.1f}-{lo + 0.1:.1f} {'█' * round(30 * n / peak):<30} {n}")


@app.command()
@handles_errors
def calibrate(
    labels: Annotated[Path, typer.Option("--labels", help="YAML list of {query, relevant: [doc_key, ...]}")],
    kb: KbOpt = "sample",
    write: Annotated[bool, typer.Option("--write", help="store the chosen thresholds in config.yaml for this embedder")] = False,
    as_json: JsonOpt = False,
):
    """Choose relevance thresholds for the active embedder from labelled questions."""
    from rich.table import Table

    from agent.settings import config_path
    from retrieval.calibration import calibrate as run_calibration, load_labels, write_thresholds

    pairs = load_labels(labels)
    rt = _runtime()
    try:
        result = run_calibration(rt, kb, pairs)
    finally:
        rt.close()
    if write:
        write_thresholds(config_path(), result.embedder, result.highly_relevant.threshold, result.reference.threshold)
    if as_json:
        _print_json(result.model_dump() | {"written_to": str(config_path()) if write else None})
        return
    table = Table(title=f"{result.embedder} on {kb}: {result.labels} questions, {result.relevant_pairs} relevant pairs")
    for col in ("threshold", "precision", "recall", "predicted"):
        table.add_column(col, justify="right")
    marks = {result.highly_relevant.threshold: " ← HIGHLY_RELEVANT", result.reference.threshold: " ← REFERENCE"}
    for row in result.rows:
        if round(row.threshold * 100) % 5 == 0 or row.threshold in marks:
            table.add_row(f"{row.threshold:.2f}{marks.get(row.threshold, '')}", f"{row.precision:.3f}",
                          f"{row.recall:.3f}", str(row.predicted))
    console.print(table)
    console.print(f"rule: {result.rule}", highlight=False, markup=False)
    for name, choice in (("HIGHLY_RELEVANT", result.highly_relevant), ("REFERENCE", result.reference)):
        cur = result.current[name.lower()]
        note = "" if choice.met_rule else " (no threshold met the precision rule: best precision taken)"
        console.print(f"{name}: {cur['threshold']:.2f} now (precision {cur['precision']:.3f}, recall {cur['recall']:.3f})"
                      f" -> {choice.threshold:.2f} (precision {choice.precision:.3f}, recall {choice.recall:.3f}){note}",
                      highlight=False, markup=False)
    if write:
        console.print(f"written to {config_path()}", highlight=False, markup=False)


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
def graph_stop(as_json: JsonOpt = False):
    """Stop the embedded FalkorDB server of this EXECUTOR_HOME (it starts again on demand)."""
    stopped = _runtime().graph_server.stop()
    if as_json:
        _print_json({"stopped": stopped})
    else:
        typer.echo("stopped the embedded FalkorDB" if stopped else "the embedded FalkorDB was not running")


if __name__ == "__main__":  # pragma: no cover
    app()
