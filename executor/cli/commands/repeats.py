"""`calibrate-repeats`: the repeat rule's thresholds from labelled pairs of lookups."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from executor.cli.commands.common import JsonOpt, KbsOpt, config_to_write, console, pair_labels, print_json, runtime


def calibrate_repeats(
    labels: Annotated[
        list[Path],
        typer.Option(
            "--labels", help="YAML list of {earlier, later, label: repeat|distinct}; repeat for several files"
        ),
    ],
    kb: KbsOpt = None,
    write: Annotated[
        bool, typer.Option("--write", help="store the chosen thresholds in config.yaml for this embedder")
    ] = False,
    as_json: JsonOpt = False,
):
    """Choose the repeat thresholds for the active embedder; precision and recall are held out (k-fold)."""
    from rich.table import Table

    from executor.core.settings import config_path
    from executor.retrieval.repeat_calibration import (
        calibrate_repeats as run,
    )
    from executor.retrieval.repeat_calibration import (
        load_repeat_labels,
        write_repeat_thresholds,
    )

    if write:
        config_to_write()
    sets = [(name, load_repeat_labels(path)) for path, name in pair_labels(labels, kb)]
    with runtime() as rt:
        result = run(rt, sets)
    if write:
        write_repeat_thresholds(config_path(), result.embedder, result.overlap.threshold, result.miss_overlap.threshold)
    if as_json:
        print_json(result.model_dump() | {"written_to": str(config_path()) if write else None})
        return
    table = Table(
        title=f"{result.embedder} on {result.kb}: {result.pairs} pairs, {result.repeats} repeats (fitted on all pairs)"
    )
    for col in ("threshold", "found: precision", "recall", "blocked", "miss: precision", "recall ", "blocked "):
        table.add_column(col, justify="right")
    marks = {result.overlap.threshold: " ← overlap", result.miss_overlap.threshold: " ← miss"}
    for found, miss in zip(result.rows_found, result.rows_miss):
        if round(found.threshold * 100) % 5 == 0 or found.threshold in marks:
            table.add_row(
                f"{found.threshold:.2f}{marks.get(found.threshold, '')}",
                f"{found.precision:.3f}",
                f"{found.recall:.3f}",
                str(found.predicted),
                f"{miss.precision:.3f}",
                f"{miss.recall:.3f}",
                str(miss.predicted),
            )
    console.print(table)
    console.print(f"rule: {result.rule}", highlight=False, markup=False)
    h = result.held_out
    console.print(
        f"held out: precision {h.precision:.3f}, recall {h.recall:.3f} ({h.true_positives} repeats blocked, "
        f"{h.false_positives} distinct pairs blocked, {h.false_negatives} repeats missed)",
        highlight=False,
        markup=False,
    )
    w = h.with_doc_retrieved
    console.print(
        f"with doc_retrieved (every document already returned): precision {w['precision']:.3f}, "
        f"recall {w['recall']:.3f} ({int(w['false_positives'])} distinct pairs blocked)",
        highlight=False,
        markup=False,
    )
    p = h.with_session_pages
    console.print(
        f"with the session's pages (best page already held, nothing new as relevant; the rules that run): "
        f"precision {p['precision']:.3f}, recall {p['recall']:.3f} ({int(p['false_positives'])} distinct pairs "
        f"answered from the session); by width of 'as relevant' (bands): "
        + ", ".join(f"{b['bands']:g}: {b['precision']:.2f}/{b['recall']:.2f}" for b in h.by_band),
        highlight=False,
        markup=False,
    )
    for name, choice, now in (
        ("overlap", result.overlap, result.current["overlap_threshold"]),
        ("miss-overlap", result.miss_overlap, result.current["miss_overlap_threshold"]),
    ):
        note = "" if choice.met_rule else " (no threshold met the precision rule: the most precise one taken)"
        console.print(f"{name}: {now:.2f} now -> {choice.threshold:.2f}{note}", highlight=False, markup=False)
    if write:
        console.print(f"written to {config_path()}", highlight=False, markup=False)
