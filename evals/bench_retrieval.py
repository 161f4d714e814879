"""Retrieval quality on labelled corpora: every grading side by side, the label-free one first.

    python -m evals.bench_retrieval [--helm ../shared/corpora/helm]

Ingests the bundled sample KB and, when present, the Helm documentation corpus
(kept outside the repository) into a throw-away EXECUTOR_HOME. The Helm ingest
self-calibrates (`retrieval.self_calibration`: no human label); its time and the
share of it the self-calibration took are printed. Then every labelled question
is graded once and the figures of `executor eval-retrieval` printed per corpus
and language, side by side:

- Helm: *before* (the shared preset shipped until this change, fitted on the
  sample KB's and Helm's own labels, so in-sample for Helm: a reference, no
  longer shipped), the shared preset now (sample labels only), and the KB's
  self-calibrated model (no label of any kind; Helm's labels only score it);
- sample: the similarity grading it ships with (calibrated on its labels), the
  shared preset, and its self-calibrated model (fitted here, not stored).

Then the human-label path: k-fold calibration on all label files, and Helm's own
model (`calibrate --for helm`) held out under several fold shuffles (mean and
range). Printed, never asserted.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from evals import HELM, REPO_ROOT
from evals.quality_report import quality_table
from executor.agent.runtime import Runtime
from executor.core.settings import SAMPLE_KB_PATH, KbModel, Ranker, Settings, Thresholds
from executor.retrieval.calibration import calibrate, cross_validate, load_labels, observe, regrade
from executor.retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest
from executor.retrieval.quality import measure
from executor.retrieval.self_calibration import calibrate_kb

# The shared preset shipped before self-calibration (sessions 4-6): fitted on the sample KB's labels AND Helm's.
# Kept here only as the "before" column; never shipped again (no shipped model may be fitted on Helm's labels).
BEFORE = Thresholds(
    max_l2_distance=2.0,
    highly_relevant_threshold=0.48,
    reference_threshold=0.3,
    supplement_threshold=0.15,
    ranker=Ranker(
        bias=-5.4556,
        weights={
            "similarity": 3.8768,
            "lift": 4.8229,
            "gap": -4.5805,
            "lexical": 1.1788,
            "coverage": 3.2229,
            "kb_coverage": -0.133,
            "unknown_names": -1.1826,
            "specific_keyword": 1.8725,
            "other_language": 2.8898,
            "coverage_same_language": 1.232,
            "lexical_same_language": 0.8831,
        },
    ),
)


def label_free(rt, home: Path, sets, helm_seconds: float | None, helm_calibration: dict | None, console) -> None:
    """Each KB's grading with no human label in any fitted model, next to what it replaces."""
    shared = Settings(home=home, grading="ranker").thresholds(rt.embedder.name)
    for kb in dict.fromkeys(kb for _, kb in sets):
        files = [path for path, k in sets if k == kb]
        row = rt.catalog.require(kb)
        if kb == "helm":
            stored = KbModel.parse(kb, row.grading_model) if row.grading_model else None
            gradings = {"before (Helm-fitted preset)": BEFORE, "shared preset now": shared}
            if stored is not None:
                gradings["self-calibrated"] = stored.thresholds
        else:
            own = calibrate_kb(rt.grader, rt.catalog, rt.embedder, kb, shared, "bench")
            gradings = {
                "similarity (shipped)": rt.settings.kb_thresholds(rt.embedder.name, row),
                "shared preset now": shared,
            }
            if own.model is not None:
                gradings["self-calibrated"] = own.model.thresholds
        qualities = {}
        for name, t in gradings.items():
            observed = [
                o for path in files for o in observe(rt.grader, rt.catalog, rt.embedder, kb, load_labels(path), t)
            ]
            qualities[name] = measure(regrade(observed, t))
        console.print(
            quality_table(f"{kb}: graded with no human label (self-calibrated) against what it replaces", qualities)
        )
    if helm_seconds is not None and helm_calibration is not None:
        extra = helm_calibration["seconds"]
        console.print(
            f"Helm ingest {helm_seconds:.1f} s, of which self-calibration {extra:.1f} s "
            f"({helm_calibration['generated']} generated, {helm_calibration['off_topic']} off-topic questions): "
            f"{helm_seconds / max(helm_seconds - extra, 1e-9):.2f}x the ingest without it",
            highlight=False,
        )


SEED_FIGURES = ("hit_at_1", "relevant_returned", "precise_precision", "highly_relevant_precision", "off_topic_none")


def seed_table(observed, max_l2: float, seeds: int) -> Table:
    """Helm's own model (`calibrate --for helm`), 5-fold held out under `seeds` fold shuffles: the mean and the
    range of each figure, and the off-topic questions graded PRECISE/HR over all of them."""
    runs = [
        measure(cross_validate(observed, max_l2, target="helm", seed=seed)).by_kb["helm"]["all"]
        for seed in tqdm(range(seeds), desc="fold seeds")
    ]
    table = Table(title=f"Helm's own model, 5-fold held out, {seeds} fold seeds: mean (min-max)")
    for name in SEED_FIGURES:
        table.add_column(name.replace("_", " "), justify="right")
    table.add_column("off-topic PRECISE/HR, all seeds", justify="right")
    cells = []
    for name in SEED_FIGURES:
        values = [getattr(r, name) for r in runs if getattr(r, name) is not None]
        cells.append(f"{statistics.mean(values):.3f} ({min(values):.3f}-{max(values):.3f})" if values else "-")
    table.add_row(*cells, str(sum(r.off_topic_confident for r in runs)))
    return table


def main(
    helm: Path = typer.Option(HELM, help="the Helm corpus folder (docs/ and questions.yaml)"),
    seeds: int = typer.Option(12, min=1, help="fold shuffles for Helm's own model's held-out figures"),
):
    console = Console(width=160)
    home = Path(tempfile.mkdtemp(prefix="bench-retrieval-"))
    rt = Runtime(Settings(home=home))
    sets = [
        (REPO_ROOT / "evals" / "labels" / "sample.yaml", "sample"),
        (REPO_ROOT / "evals" / "labels" / "sample-keywords.yaml", "sample"),
    ]
    helm_seconds, helm_calibration = None, None
    try:
        ingest(rt, SAMPLE_KB_PATH, "sample", progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
        if (helm / "questions.yaml").exists():
            console.print("ingesting the Helm corpus ...")
            report = ingest(rt, helm / "docs", "helm", progress=True)
            helm_seconds, helm_calibration = report.seconds, report.calibration
            sets.append((helm / "questions.yaml", "helm"))
        else:
            console.print(f"[yellow]{helm}: no Helm corpus, sample KB only[/yellow]")
        label_free(rt, home, sets, helm_seconds, helm_calibration, console)
        gradings = {}
        observed = []
        for name in ("similarity", "ranker"):
            t = Settings(home=home, grading=name).thresholds(rt.embedder.name)
            observed = [
                o for path, kb in sets for o in observe(rt.grader, rt.catalog, rt.embedder, kb, load_labels(path), t)
            ]
            gradings[name] = measure(regrade(observed, t))
        console.print(quality_table(f"{rt.embedder.name}: shipped presets, every labelled question", gradings))
        current = {kb: Settings(home=home, grading="ranker").thresholds(rt.embedder.name) for _, kb in sets}
        result = calibrate(observed, {str(p): 0 for p, _ in sets}, current, rt.embedder.name)
        console.print(
            quality_table(
                f"ranker, {result.folds}-fold: each question graded by a model fitted without it",
                {"held-out": result.held_out},
            )
        )
        if any(kb == "helm" for _, kb in sets):
            console.print(seed_table(observed, current["helm"].max_l2_distance, seeds))
    finally:
        rt.close(stop_graph_server=True)


if __name__ == "__main__":
    typer.run(main)
