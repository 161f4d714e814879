"""Measuring: `eval`, `stats` and `calibrate`."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Optional

import typer

from agent.commands.llm import use_local_model
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
    max_rounds: Annotated[Optional[int], typer.Option(min=1, max=200, help="LLM rounds a turn may take, guards on "
                                                      "or off (default: the context's 25)")] = None,
    judge: Annotated[str, typer.Option(help="expectations: each scenario's expect block; bound: only that no "
                                       "guarded turn runs more lookups than the budget (for weak real models)")] = "expectations",
):
    """Replay the ISS-002 scenarios; exit code 1 when any judged scenario fails."""
    from agent.settings import REPO_ROOT
    from evals import report
    from evals.runner import aggregate, run_suite
    from evals.scenarios_model import load_scenarios

    if policy not in ("scripted", "llm") or guards not in ("on", "off") or judge not in ("expectations", "bound"):
        raise ExecutorError("--policy is scripted or llm, --guards is on or off, --judge is expectations or bound")
    from retrieval.repeat_calibration import load_repeat_labels

    scenarios = load_scenarios(paths or [REPO_ROOT / "evals" / "scenarios"])
    labels = load_repeat_labels(repeat_labels or REPO_ROOT / "evals" / "labels" / "repeats.yaml")
    rt = runtime()
    with ExitStack() as stack:
        stack.callback(rt.close)
        for kb in sorted({s.kb for s in scenarios}):
            rt.catalog.require(kb)
        model = None
        if policy == "llm":
            use_local_model(rt, stack)
            if not rt.settings.llm_configured:
                raise ExecutorError("--policy llm needs EXECUTOR_LOCAL_MODEL, OPENAI_API_KEY or OPENAI_BASE_URL")
            from agent.llm import make_chat_model

            model, _ = make_chat_model(rt.settings)
        show = sys.stderr.isatty()
        judged = run_suite(rt, scenarios, guards == "on", policy, model, progress=show, repeat_labels=labels,
                           max_rounds=max_rounds)
        baseline = run_suite(rt, scenarios, guards != "on", policy, model, progress=show, repeat_labels=labels,
                             max_rounds=max_rounds)
    on, off = (judged, baseline) if guards == "on" else (baseline, judged)
    if json_out:
        report.write_json(report.to_json(judged, baseline, policy), json_out)
    if markdown:
        markdown.write_text(report.markdown(on, off, policy), encoding="utf-8")
    if plot:
        report.plot(on, off, plot)
    agg = aggregate(judged)
    failed = [r for r in judged if (not r.within_budget if judge == "bound" else not r.passed)]
    for r in failed:
        why = (f"{max(r.retrievals_by_turn)} retrieval calls ran in one turn, the budget is {r.lookup_budget}"
               if judge == "bound" else "; ".join(r.failures))
        console.print(f"FAIL {r.id}: {why}", style="red", highlight=False, markup=False)
    console.print(
        f"{agg['scenarios_passed']}/{agg['scenarios']} scenarios pass (guards {guards}, {policy}); "
        f"mean lookups executed {agg['mean_executed_lookups']} (storms {agg['mean_executed_lookups_storms']}), "
        f"false blocks {agg['false_blocks']}, "
        f"duplicate documents sent {agg['duplicate_docs_sent']}, citation recall {agg['citation_recall']}; "
        f"baseline (guards {'off' if guards == 'on' else 'on'}): mean lookups executed "
        f"{aggregate(baseline)['mean_executed_lookups']} (storms {aggregate(baseline)['mean_executed_lookups_storms']}); "
        f"most retrieval calls in one turn {agg['max_executed_retrievals']} "
        f"(off: {aggregate(baseline)['max_executed_retrievals']}), mean LLM rounds {agg['mean_rounds']} "
        f"(off: {aggregate(baseline)['mean_rounds']})",
        highlight=False, markup=False,
    )
    if failed:
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
