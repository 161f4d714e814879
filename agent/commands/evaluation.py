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
    repeat_labels: Annotated[Optional[Path], typer.Option(
        "--repeat-labels", help="repeat-pair labels: a blocked lookup they call distinct is a false block "
        "(default: evals/labels/repeats.yaml)")] = None,
):
    """Replay the ISS-002 scenarios; exit code 1 when any scenario's expectation fails."""
    from agent.settings import REPO_ROOT
    from evals import report
    from evals.runner import aggregate, run_suite
    from evals.scenarios_model import load_scenarios

    if policy not in ("scripted", "llm") or guards not in ("on", "off"):
        raise ExecutorError("--policy is scripted or llm, --guards is on or off")
    from retrieval.repeat_calibration import load_repeat_labels

    scenarios = load_scenarios(paths or [REPO_ROOT / "evals" / "scenarios"])
    labels = load_repeat_labels(repeat_labels or REPO_ROOT / "evals" / "labels" / "repeats.yaml")
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
        judged = run_suite(rt, scenarios, guards == "on", policy, model, progress=show, repeat_labels=labels)
        baseline = run_suite(rt, scenarios, guards != "on", policy, model, progress=show, repeat_labels=labels)
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
        f"false blocks {agg['false_blocks']}, "
        f"duplicate documents sent {agg['duplicate_docs_sent']}, citation recall {agg['citation_recall']}; "
        f"baseline (guards {'off' if guards == 'on' else 'on'}): mean lookups executed "
        f"{aggregate(baseline)['mean_executed_lookups']} (storms {aggregate(baseline)['mean_executed_lookups_storms']})",
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
    from stores.invocation_stats import invocation_stats, plot_stats, traversal_cache_stats

    if session:
        check_session_id(session)
    try:
        start = datetime.fromisoformat(since) if since else None
    except ValueError:
        raise ExecutorError(f"--since {since!r} is not a date (YYYY-MM-DD) or an ISO time") from None
    db = runtime().db
    data = invocation_stats(db, session=session, since=start)
    data["traversal_cache"] = traversal_cache_stats(db, session=session, since=start)
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
    cache = data["traversal_cache"]
    rate = "-" if cache["hit_rate"] is None else f"{cache['hit_rate']:.0%}"
    typer.echo(f"graph traversal cache: {cache['hits']} hits, {cache['misses']} misses, hit rate {rate}")
