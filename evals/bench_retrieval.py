"""Retrieval quality on labelled corpora: the similarity grading against the calibrated ranker, side by side.

    python -m evals.bench_retrieval [--helm ../shared/corpora/helm]

Ingests the bundled sample KB and, when present, the Helm documentation corpus
(kept outside the repository) into a throw-away EXECUTOR_HOME, grades every
labelled question once under each grading, and prints the figures of
`executor eval-retrieval` per corpus and language. Then it runs the k-fold
calibration on all label files, so the ranker's figures also appear measured on
questions its fold never saw, and Helm's own model (`calibrate --for helm`) held
out under several fold shuffles (mean and range). Printed, never asserted.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from evals.quality_report import quality_table
from agent.runtime import Runtime
from core.settings import REPO_ROOT, SAMPLE_KB_PATH, Settings
from retrieval.calibration import calibrate, cross_validate, load_labels, observe, regrade
from retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest
from retrieval.quality import measure

HELM = REPO_ROOT.parent / "shared" / "corpora" / "helm"


SEED_FIGURES = ("hit_at_1", "relevant_returned", "precise_precision", "highly_relevant_precision", "off_topic_none")


def seed_table(observed, max_l2: float, seeds: int) -> Table:
    """Helm's own model (`calibrate --for helm`), 5-fold held out under `seeds` fold shuffles: the mean and the
    range of each figure, and the off-topic questions graded PRECISE/HR over all of them."""
    runs = [measure(cross_validate(observed, max_l2, target="helm", seed=seed)).by_kb["helm"]["all"]
            for seed in tqdm(range(seeds), desc="fold seeds")]
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


def main(helm: Path = typer.Option(HELM, help="the Helm corpus folder (docs/ and questions.yaml)"),
         seeds: int = typer.Option(12, min=1, help="fold shuffles for Helm's own model's held-out figures")):
    console = Console(width=160)
    home = Path(tempfile.mkdtemp(prefix="bench-retrieval-"))
    rt = Runtime(Settings(home=home))
    sets = [(REPO_ROOT / "evals" / "labels" / "sample.yaml", "sample"),
            (REPO_ROOT / "evals" / "labels" / "sample-keywords.yaml", "sample")]
    try:
        ingest(rt, SAMPLE_KB_PATH, "sample", progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
        if (helm / "questions.yaml").exists():
            console.print("ingesting the Helm corpus ...")
            ingest(rt, helm / "docs", "helm", progress=True)
            sets.append((helm / "questions.yaml", "helm"))
        else:
            console.print(f"[yellow]{helm}: no Helm corpus, sample KB only[/yellow]")
        gradings = {}
        observed = []
        for name in ("similarity", "ranker"):
            t = Settings(home=home, grading=name).thresholds(rt.embedder.name)
            observed = [o for path, kb in sets for o in observe(rt.grader, rt.catalog, rt.embedder, kb, load_labels(path), t)]
            gradings[name] = measure(regrade(observed, t))
        console.print(quality_table(f"{rt.embedder.name}: shipped presets, every labelled question", gradings))
        current = {kb: Settings(home=home, grading="ranker").thresholds(rt.embedder.name) for _, kb in sets}
        result = calibrate(observed, {str(p): 0 for p, _ in sets}, current, rt.embedder.name)
        console.print(quality_table(f"ranker, {result.folds}-fold: each question graded by a model fitted without it",
                                    {"held-out": result.held_out}))
        if any(kb == "helm" for _, kb in sets):
            console.print(seed_table(observed, current["helm"].max_l2_distance, seeds))
    finally:
        rt.close(stop_graph_server=True)


if __name__ == "__main__":
    typer.run(main)
