"""Ingest throughput per format: read, convert, clean and chunk; then one full ingest with embedding.

    python -m evals.bench_ingest [--docs 20] [--sections 6]

Writes the same synthetic documents (English and Chinese prose, a code block and a table per
section) as Markdown, MDX, text, HTML, PDF, DOCX, PPTX and XLSX into a throw-away folder, times
loading each format's folder (best of 3; the first conversion's import cost is reported on
its own), and prints documents/s, MB/s of input and chunks/s side by side with Markdown as the
baseline. Then ingests the mixed folder into a throw-away home to show how much of a real
ingest conversion is. Printed, never asserted.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from evals.doc_writers import write_docx, write_pdf, write_pptx, write_xlsx
from executor.agent.runtime import Runtime
from executor.core.settings import Settings
from executor.retrieval.ingest import ingest
from executor.retrieval.sources import load_documents

FORMATS = ["md", "mdx", "txt", "html", "pdf", "docx", "pptx", "xlsx"]
TOPICS = ["connection pool", "certificate rotation", "rollback", "log retention", "rate limiting", "disk pressure"]
EN = (
    "When the {t} alarm fires, check the dashboard first and compare the last deploy with the baseline. "
    "Operators record every change in the runbook so that the next shift can follow it. "
)
ZH = "当{t}告警触发时，先检查仪表盘，再对比最近一次发布与基线。值班人员把每次变更记录在手册中。"


def _sections(i: int, n: int) -> list[tuple[str, list[str]]]:
    rng = random.Random(i)
    out = []
    for s in range(n):
        t = TOPICS[(i + s) % len(TOPICS)]
        out.append(
            (f"{t.title()} step {s + 1}", [EN.format(t=t) * rng.randint(2, 4), ZH.format(t=t) * rng.randint(2, 4)])
        )
    return out


def _markdown(title: str, sections, mdx: bool) -> str:
    parts = [f"---\ntitle: {title}\n---\n"]
    if mdx:
        parts.append("import Tabs from '@theme/Tabs';\nimport TabItem from '@theme/TabItem';\n")
    for heading, paragraphs in sections:
        parts.append(f"## {heading}\n")
        body = "\n\n".join(paragraphs)
        parts.append(
            f'<Tabs>\n<TabItem value="a" label="Linux">\n\n{body}\n\n</TabItem>\n</Tabs>\n' if mdx else body + "\n"
        )
        parts.append("```bash\nkubectl get pods -n ops\n```\n\n| key | value |\n|---|---|\n| retries | 3 |\n")
    return "\n".join(parts)


def _html(title: str, sections) -> str:
    body = "".join(
        f"<h2>{h}</h2>" + "".join(f"<p>{p}</p>" for p in ps) + "<pre><code>kubectl get pods</code></pre>"
        for h, ps in sections
    )
    return (
        f"<html><head><title>{title}</title><script>var x=1;</script></head><body><h1>{title}</h1>{body}</body></html>"
    )


def write_corpus(root: Path, docs: int, sections: int) -> None:
    for i in range(docs):
        title, secs = f"Runbook {i}", _sections(i, sections)
        (root / "md").mkdir(parents=True, exist_ok=True)
        (root / "md" / f"doc{i}.md").write_text(_markdown(title, secs, mdx=False), encoding="utf-8")
        (root / "mdx").mkdir(exist_ok=True)
        (root / "mdx" / f"doc{i}.mdx").write_text(_markdown(title, secs, mdx=True), encoding="utf-8")
        (root / "txt").mkdir(exist_ok=True)
        (root / "txt" / f"doc{i}.txt").write_text(
            "\n\n".join(f"{h}\n\n" + "\n\n".join(ps) for h, ps in secs), encoding="utf-8"
        )
        (root / "html").mkdir(exist_ok=True)
        (root / "html" / f"doc{i}.html").write_text(_html(title, secs), encoding="utf-8")
        # fpdf2's core fonts are Latin-1: the PDF gets the English half of each section
        write_pdf(root / "pdf" / f"doc{i}.pdf", title, [(h, ps[:1]) for h, ps in secs])
        write_docx(root / "docx" / f"doc{i}.docx", title, secs)
        write_pptx(root / "pptx" / f"doc{i}.pptx", title, secs)
        write_xlsx(root / "xlsx" / f"doc{i}.xlsx", [["step", "note"]] + [[h, ps[0]] for h, ps in secs])


def _time_load(folder: Path, repeats: int = 3) -> tuple[float, list]:
    best, docs = float("inf"), []
    for _ in range(repeats):
        started = time.perf_counter()
        docs = load_documents(folder).documents
        for d in docs:
            d.chunks()
        best = min(best, time.perf_counter() - started)
    return best, docs


def main(docs: int = typer.Option(20, help="documents per format"), sections: int = typer.Option(6)):
    console = Console()
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    try:
        write_corpus(work / "corpus", docs, sections)
        first = {}
        for fmt in FORMATS:  # one file each, to separate the converters' import cost from throughput
            one = work / "first" / fmt
            one.mkdir(parents=True)
            shutil.copy(next((work / "corpus" / fmt).iterdir()), one)
            started = time.perf_counter()
            load_documents(one)
            first[fmt] = time.perf_counter() - started
        rows = {}
        for fmt in FORMATS:
            folder = work / "corpus" / fmt
            seconds, loaded = _time_load(folder)
            size = sum(p.stat().st_size for p in folder.iterdir())
            chunks = sum(len(d.chunks()) for d in loaded)
            rows[fmt] = (len(loaded), size, chunks, seconds)
        base = rows["md"][3] / rows["md"][0]
        table = Table(title=f"read + convert + clean + chunk, {docs} documents per format (best of 3)")
        for col in (
            "format",
            "input MB",
            "chunks",
            "docs/s",
            "MB/s",
            "chunks/s",
            "time per doc vs Markdown",
            "first file (imports)",
        ):
            table.add_column(col, justify="right")
        for fmt, (n, size, chunks, seconds) in rows.items():
            table.add_row(
                fmt,
                f"{size / 1e6:.2f}",
                str(chunks),
                f"{n / seconds:,.0f}",
                f"{size / 1e6 / seconds:.2f}",
                f"{chunks / seconds:,.0f}",
                f"{(seconds / n) / base:.1f}x",
                f"{first[fmt] * 1000:,.0f} ms",
            )
        console.print(table)

        mixed = work / "mixed"
        for fmt in FORMATS:
            shutil.copytree(work / "corpus" / fmt, mixed / fmt)
        rt = Runtime(Settings(home=work / "home"))
        try:
            started = time.perf_counter()
            report = ingest(rt, mixed, "bench", progress=False)
            total = time.perf_counter() - started
        finally:
            rt.close()
        converting = sum(r[3] for r in rows.values())
        console.print(
            f"full ingest of all {report.documents} documents ({report.chunks} chunks, USE embedding, Milvus Lite): "
            f"{total:.1f} s, {report.documents / total:.1f} documents/s; reading and converting is "
            f"{converting:.1f} s of it ({100 * converting / total:.0f}%)"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    typer.run(main)
