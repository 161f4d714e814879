"""Measuring: `eval`, `stats` and `calibrate`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from agent.commands.common import JsonOpt, KbOpt, SessionOpt, console, handles_errors, print_json, runtime
from agent.errors import ExecutorError

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
    rt = runtime()
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
    data = invocation_stats(runtime().db, session=session, since=start)
    if plot:
        plot_stats(data, plot)
    if as_json:
        print_json(data)
        return
    typer.echo(f"{data['lookups']} lookups in {data['sessions']} sessions ({data['errors']} errors); "
               f"at most {data['max_lookups_in_a_session']} in one session, median {data['median_lookups_per_session']}")
    typer.echo("levels: " + ", ".join(f"{k} {v}" for k, v in data["relevance_levels"].items()))
    typer.echo("dedup:  " + (", ".join(f"{k} {v}" for k, v in data["dedup_reasons"].items()) or "-"))
    hist = data["similarity_histogram"]
    peak = max(hist["counts"]) or 1
    for lo, n in zip(hist["bins"], hist["counts"]):
        typer.echo(f"  {lo:.1f}-{lo + 0.1:.1f} {'█' * round(30 * n / peak):<30} {n}")


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
    rt = runtime()
    try:
        result = run_calibration(rt, kb, pairs)
    finally:
        rt.close()
    if write:
        write_thresholds(config_path(), result.embedder, result.highly_relevant.threshold, result.reference.threshold)
    if as_json:
        print_json(result.model_dump() | {"written_to": str(config_path()) if write else None})
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


