"""The eval report: JSON, a Markdown table of guards off against guards on, and a PNG plot."""

from __future__ import annotations

import json
from pathlib import Path

from evals.runner import ScenarioResult, aggregate, is_false_block

ROWS = [
    ("scenarios passed", "scenarios_passed"),
    ("scenarios failed", "scenarios_failed"),
    ("mean lookups proposed", "mean_proposed_lookups"),
    ("mean lookups executed", "mean_executed_lookups"),
    ("mean lookups executed, storm scenarios", "mean_executed_lookups_storms"),
    ("false blocks", "false_blocks"),
    ("rephrasings in a later turn", "rephrasings"),
    ("rephrasings answered from the session (no lookup ran)", "rephrasings_answered_from_session"),
    ("lookups run on a rephrasing", "rephrasing_lookups_run"),
    ("pages sent by lookups run on a rephrasing", "rephrasing_pages_sent"),
    ("distinct lookups answered from documents already sent (doc_retrieved)", "distinct_answered_from_sent_documents"),
    ("mean retrieval calls executed (lookup + knowledge graph)", "mean_executed_retrievals"),
    ("most retrieval calls executed in one turn", "max_executed_retrievals"),
    ("turns over the lookup budget", "turns_over_budget"),
    ("mean LLM rounds per turn", "mean_rounds"),
    ("most LLM rounds in one turn", "max_rounds"),
    ("duplicate documents sent", "duplicate_docs_sent"),
    ("same-domain repeats", "same_domain_repeats"),
    ("PRECISE-stop compliance", "precise_stop_compliance"),
    ("citation recall", "citation_recall"),
    ("mean characters of tool output to the LLM", "mean_tool_output_chars"),
    ("mean turn latency (ms)", "mean_latency_ms"),
]


def to_json(judged: list[ScenarioResult], baseline: list[ScenarioResult], policy: str) -> dict:
    return {
        "policy": policy,
        "guards": "on" if judged and judged[0].guards else "off",
        "aggregate": aggregate(judged),
        "baseline_aggregate": aggregate(baseline) if baseline else None,
        "scenarios": [r.model_dump(exclude={"trace"}) | {"trace": r.trace} for r in judged],
        "baseline_scenarios": [r.model_dump(exclude={"trace"}) for r in baseline],
    }


def markdown(on: list[ScenarioResult], off: list[ScenarioResult], policy: str) -> str:
    agg_on, agg_off = aggregate(on), aggregate(off)
    lines = [
        f"# ISS-002 eval ({policy} policy, {len(on)} scenarios, {sum(r.turns > 1 for r in on)} of them multi-turn)",
        "",
        "| metric | guards off | guards on |",
        "|---|---:|---:|",
    ]
    for label, key in ROWS:
        lines.append(f"| {label} | {_fmt(agg_off.get(key))} | {_fmt(agg_on.get(key))} |")
    blocked = sorted(set(agg_on["blocked_by_reason"]) | set(agg_off["blocked_by_reason"]))
    for reason in blocked:
        lines.append(
            f"| blocked: {reason} | {agg_off['blocked_by_reason'].get(reason, 0)} | "
            f"{agg_on['blocked_by_reason'].get(reason, 0)} |"
        )
    lines += [
        "",
        "| scenario | lang | turns | executed off | executed on (per turn) | blocked on | false blocks on "
        "| rephrasings run on / pages sent | duplicate docs off / on | on passes |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    off_by_id = {r.id: r for r in off}
    for r in on:
        b = off_by_id.get(r.id)
        rephrasings = f"{r.rephrasing_lookups_run} of {r.rephrasings} / {len(r.rephrasing_pages_sent)}"
        lines.append(
            f"| {r.id} | {r.lang} | {r.turns} | {b.executed_lookups if b else '-'} | {r.executed_lookups}"
            f"{' (' + ', '.join(map(str, r.executed_by_turn)) + ')' if r.turns > 1 else ''} | "
            f"{sum(r.blocked_by_reason.values())} | {sum(map(is_false_block, r.false_blocks))} | "
            f"{rephrasings if r.rephrasings else '-'} | "
            f"{b.duplicate_docs_sent if b else '-'} / {r.duplicate_docs_sent} | "
            f"{'yes' if r.passed else 'NO: ' + '; '.join(r.failures)} |"
        )
    return "\n".join(lines) + "\n"


def _fmt(value) -> str:
    return "-" if value is None else str(value)


def plot(on: list[ScenarioResult], off: list[ScenarioResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    off_by_id = {r.id: r.executed_lookups for r in off}
    ids = [r.id for r in on]
    xs = range(len(ids))
    fig, ax = plt.subplots(figsize=(max(8, len(ids) * 0.45), 5))
    ax.bar([x - 0.2 for x in xs], [off_by_id.get(i, 0) for i in ids], width=0.4, label="guards off", color="#e8590c")
    ax.bar([x + 0.2 for x in xs], [r.executed_lookups for r in on], width=0.4, label="guards on", color="#1971c2")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(ids, rotation=75, ha="right", fontsize=7)
    ax.set_ylabel("lookups executed")
    ax.set_title("Lookups executed per scenario, guards off vs on")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_json(data: dict, path: Path) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2, default=str), encoding="utf-8")
