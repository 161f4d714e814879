"""Measuring: `eval` and `stats`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from executor.cli.commands.common import (
    JsonOpt,
    SessionOpt,
    console,
    csv_list,
    output_file,
    print_json,
    runtime,
    write_plot,
    write_text,
)
from executor.core.errors import ExecutorError, InputError, printable


def eval_(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="scenario files or folders (default: evals/scenarios)")
    ] = None,
    policy: Annotated[
        str, typer.Option(help="scripted: replay the proposals; llm: ask the configured model")
    ] = "scripted",
    guards: Annotated[str, typer.Option(help="on: the code rules; off: the same graph without them (baseline)")] = "on",
    report_json: Annotated[
        Path | None, typer.Option("--report-json", help="write the full results to this file")
    ] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="write the guards off/on report here")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="write a PNG of lookups per scenario, off vs on")] = None,
    repeat_labels: Annotated[
        Path | None,
        typer.Option(
            "--repeat-labels",
            help="repeat-pair labels: a blocked lookup they call distinct is a false block "
            "(default: evals/labels/repeats*.yaml)",
        ),
    ] = None,
    max_rounds: Annotated[
        int | None,
        typer.Option(min=1, max=200, help="LLM rounds a turn may take, guards on or off (default: the context's 25)"),
    ] = None,
    judge: Annotated[
        str,
        typer.Option(
            help="expectations: each scenario's expect block; bound: only that no "
            "guarded turn runs more lookups than the budget (for weak real models)"
        ),
    ] = "expectations",
    as_json: JsonOpt = False,
):
    """Replay the ISS-002 scenarios; exit code 1 when any judged scenario fails.

    Its tool calls are logged with source 'eval', which `executor stats` leaves out unless asked."""
    from evals import REPO_ROOT, report
    from evals.runner import aggregate, default_repeat_labels, llm_policy_model, prepare_knowledge_bases, run_suite
    from evals.scenarios_model import load_scenarios

    # the option that is wrong, alone (the line named all three whichever it was)
    for option, value, allowed in (
        ("--policy", policy, ("scripted", "llm")),
        ("--guards", guards, ("on", "off")),
        ("--judge", judge, ("expectations", "bound")),
    ):
        if value not in allowed:
            raise InputError(f"{option} is {' or '.join(allowed)}, not {printable(value)!r}")
    from executor.retrieval.repeat_calibration import load_repeat_labels

    scenarios = load_scenarios(paths or [REPO_ROOT / "evals" / "scenarios"])
    labels = load_repeat_labels(repeat_labels) if repeat_labels else default_repeat_labels(REPO_ROOT)
    output_file("--report-json", report_json, example="report.json")
    output_file("--markdown", markdown)
    output_file("--plot", plot, ".png")
    outputs = [out for out in (report_json, markdown, plot) if out is not None]
    for out in outputs:  # a suite can run for minutes: a report it cannot write fails now
        _check_writable(out)
    with runtime("eval", serve_model=policy == "llm") as rt:
        # a scenario on documentation kept outside the repository ingests it once, or is skipped without it
        scenarios, skipped = prepare_knowledge_bases(rt, scenarios, REPO_ROOT, progress=sys.stderr.isatty())
        for line in skipped:
            console.print(line, style="yellow", highlight=False, markup=False)
        if not scenarios:
            raise InputError("no scenario can run here: " + "; ".join(skipped))
        model = llm_policy_model(rt) if policy == "llm" else None
        show = sys.stderr.isatty()  # on stderr: --json's stdout stays the JSON
        judged = run_suite(
            rt, scenarios, guards == "on", policy, model, progress=show, repeat_labels=labels, max_rounds=max_rounds
        )
        baseline = run_suite(
            rt, scenarios, guards != "on", policy, model, progress=show, repeat_labels=labels, max_rounds=max_rounds
        )
    on, off = (judged, baseline) if guards == "on" else (baseline, judged)
    full = report.to_json(judged, baseline, policy)
    for out in outputs:  # made only now: a run that failed first left folders behind (hostile24b finding 8)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ExecutorError(f"cannot write {out}: {exc.strerror or exc}") from exc
    if report_json:
        report.write_json(full, report_json)
    if markdown:
        write_text(markdown, report.markdown(on, off, policy))
    if plot:
        write_plot("--plot", plot, lambda path: report.plot(on, off, path))
    agg = aggregate(judged)
    failed = [r for r in judged if (not r.within_budget if judge == "bound" else not r.passed)]
    if as_json:
        print_json(full)
        if failed:
            raise typer.Exit(1)
        return
    for r in failed:
        why = (
            f"{max(r.retrievals_by_turn)} retrieval calls ran in one turn, the budget is {r.lookup_budget}"
            if judge == "bound"
            else "; ".join(r.failures)
        )
        console.print(f"FAIL {r.id}: {why}", style="red", highlight=False, markup=False)
    console.print(
        f"{agg['scenarios_passed']}/{agg['scenarios']} scenarios pass (guards {guards}, {policy}); "
        f"mean lookups executed {agg['mean_executed_lookups']} (storms {agg['mean_executed_lookups_storms']}), "
        f"false blocks {agg['false_blocks']}, rephrasings answered from the session "
        f"{agg['rephrasings_answered_from_session']} ({agg['rephrasing_lookups_run']} ran, "
        f"{agg['rephrasing_pages_sent']} pages sent), "
        f"duplicate documents sent {agg['duplicate_docs_sent']}, citation recall {agg['citation_recall']}; "
        f"baseline (guards {'off' if guards == 'on' else 'on'}): mean lookups executed "
        f"{aggregate(baseline)['mean_executed_lookups']} "
        f"(storms {aggregate(baseline)['mean_executed_lookups_storms']}); "
        f"most retrieval calls in one turn {agg['max_executed_retrievals']} "
        f"(off: {aggregate(baseline)['max_executed_retrievals']}), mean LLM rounds {agg['mean_rounds']} "
        f"(off: {aggregate(baseline)['mean_rounds']})",
        highlight=False,
        markup=False,
    )
    if failed:
        raise typer.Exit(1)


def stats(
    session: SessionOpt = None,
    since: Annotated[str | None, typer.Option(help="only lookups from this date on (YYYY-MM-DD or ISO time)")] = None,
    source: Annotated[
        str | None,
        typer.Option(
            "--source",
            help="comma-separated sources: chat, ask, lookup, mcp, studio, eval, calibrate, unknown, or all "
            "(default: real use, everything but eval and calibrate)",
        ),
    ] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="write a PNG with the four panels")] = None,
    as_json: JsonOpt = False,
):
    """Relevance levels, dedup reasons, similarities and lookups per session, from the invocation log."""
    from datetime import datetime

    from executor.core.validation import check_session_id
    from executor.stores.embedders import embedder_name
    from executor.stores.invocation_stats import invocation_stats, plot_stats, traversal_cache_stats

    if session:
        check_session_id(session)
    if source is not None and not csv_list(source):  # "" would otherwise mean the default, silently
        raise InputError("--source names no source; give e.g. chat,ask or all, or leave it out for real use")
    if since is not None and not since.strip():  # "" would otherwise mean every lookup, silently
        raise InputError("--since is empty: give a date (YYYY-MM-DD) or an ISO time, or leave it out for all")
    try:
        start = datetime.fromisoformat(since) if since else None
    except ValueError:
        raise InputError(f"--since {since!r} is not a date (YYYY-MM-DD) or an ISO time") from None
    output_file("--plot", plot, ".png")
    with runtime() as rt:
        t = rt.settings.thresholds(embedder_name(rt.settings.embedder, rt.settings.embedder_path))
        thresholds = {"highly_relevant": t.highly_relevant_threshold, "reference": t.reference_threshold}
        data = invocation_stats(rt.db, session=session, since=start, sources=csv_list(source), thresholds=thresholds)
        data["traversal_cache"] = traversal_cache_stats(rt.db, session=session, since=start)
    if plot:
        write_plot("--plot", plot, lambda path: plot_stats(data, path))
    if as_json:
        print_json(data)
        return
    scope = data["sources"] if isinstance(data["sources"], str) else ", ".join(data["sources"])
    typer.echo(
        f"{_count(data['lookups'], 'lookup')} in {_count(data['sessions'], 'session')} "
        f"({_count(data['errors'], 'error')}; {scope}); at most {data['max_lookups_in_a_session']} in one "
        f"session, median {data['median_lookups_per_session']}"
    )
    typer.echo("sources: " + (", ".join(f"{k} {v}" for k, v in data["by_source"].items()) or "-"))
    typer.echo("levels:  " + (", ".join(f"{k} {v}" for k, v in data["relevance_levels"].items()) or "-"))
    typer.echo("dedup:   " + (", ".join(f"{k} {v}" for k, v in data["dedup_reasons"].items()) or "-"))
    hist = data["similarity_histogram"]
    peak = max(hist["counts"]) or 1
    marks = {name: value for name, value in thresholds.items()}
    for lo, n in zip(hist["bins"], hist["counts"]):
        inside = [f"← {name} {v:.2f}" for name, v in marks.items() if lo <= v < lo + 0.1]
        typer.echo(f"  {lo:.1f}-{lo + 0.1:.1f} {'█' * round(30 * n / peak):<30} {n:>4} {' '.join(inside)}".rstrip())
    cache = data["traversal_cache"]
    rate = "-" if cache["hit_rate"] is None else f"{cache['hit_rate']:.0%}"
    typer.echo(f"graph traversal cache: {cache['hits']} hits, {cache['misses']} misses, hit rate {rate}")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _check_writable(out: Path) -> None:
    """`out` can be written once the suite has run: its nearest existing folder is a folder this user may write in
    (the missing ones are made then, not before a run that may fail)."""
    folder = out.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise ExecutorError(f"cannot write {out}: {folder} is not a folder this user may write in")
