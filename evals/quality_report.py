"""The retrieval-quality figures as a table (terminal) or Markdown: `executor calibrate`, `eval-retrieval`
and `evals.bench_retrieval` print the same columns."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from executor.core.errors import ExecutorError

FIGURES = [
    ("hit_at_1", "hit@1"),
    ("recall_at_5", "recall@5"),
    ("relevant_returned", "relevant returned"),
    ("precise_precision", "PRECISE precision (n)"),
    ("precise_fires", "PRECISE fires"),
    ("answerable_none", "answerable NONE"),
    ("highly_relevant_precision", "HR precision (n)"),
    ("off_topic_none", "off-topic NONE (n)"),
    ("off_topic_confident", "off-topic PRECISE/HR"),
]
LEGEND = (
    "hit@1: the primary document is relevant; recall@5: relevant documents among the 5 best scored; "
    "relevant returned: a document sent is relevant; PRECISE/HR precision: the primary is relevant when "
    "graded so; PRECISE fires: answerable questions graded PRECISE; answerable NONE: answerable questions graded "
    "nothing found; off-topic: questions nothing answers"
)


def _cell(fig, key: str) -> str:
    value = getattr(fig, key)
    if value is None:
        return "–"
    if key == "precise_precision":
        return f"{value:.2f} ({fig.precise_count})"
    if key == "highly_relevant_precision":
        return f"{value:.2f} ({fig.highly_relevant_count})"
    if key == "off_topic_none":
        return f"{value:.2f} ({fig.off_topic})"
    return str(value) if isinstance(value, int) else f"{value:.2f}"


def _columns(qualities: dict) -> list[tuple[str, object]]:
    """(header, figures) per quality: overall, then per KB and language when there are several."""
    out = []
    for name, quality in qualities.items():
        out.append((f"{name} all ({quality.overall.questions})".strip(), quality.overall))
        groups = quality.by_kb if len(quality.by_kb) > 1 else {"": dict(list(quality.by_kb.values())[0])}
        for kb, figs in groups.items():
            for lang, fig in figs.items():
                if lang == "all" and len(figs) == 2:  # one language: its column says it all
                    continue
                if kb == "" and lang == "all":
                    continue
                out.append((f"{name} {kb} {lang} ({fig.questions})".replace("  ", " ").strip(), fig))
    return out


def quality_table(title: str, qualities: dict) -> Table:
    """The figures of the retrieval-quality report, one row per group of questions."""
    table = Table(title=title, caption=LEGEND)
    table.add_column("questions")
    for _, label in FIGURES:
        table.add_column(label, justify="right")
    for header, fig in _columns(qualities):
        table.add_row(header, *[_cell(fig, key) for key, _ in FIGURES])
    return table


def write_markdown(path: Path, qualities: dict) -> None:
    header = ["questions", *[label for _, label in FIGURES]]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * len(FIGURES)]
    for name, fig in _columns(qualities):
        lines.append("| " + " | ".join([name, *[_cell(fig, key) for key, _ in FIGURES]]) + " |")
    lines += ["", LEGEND]
    try:
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    except OSError as exc:
        raise ExecutorError(f"{path}: cannot write ({exc.strerror})") from exc
