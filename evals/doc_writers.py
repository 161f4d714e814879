"""Real files of every converted format, written by the libraries people make them with.

Used by the ingest tests (fixtures generated, never checked in) and by `evals.bench_ingest`; python-docx and
fpdf2 are dev dependencies, python-pptx and openpyxl come with markitdown's extras.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

Sections = list[tuple[str, list[str]]]  # (heading, paragraphs)


def write_docx(path: Path, title: str, sections: Sections) -> Path:
    from docx import Document

    doc = Document()
    doc.core_properties.title = title
    for heading, paragraphs in sections:
        doc.add_heading(heading, level=1)
        for text in paragraphs:
            doc.add_paragraph(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(str(path))
    return path


def _pdf(title: str | None = None):
    from fpdf import FPDF

    pdf = FPDF()
    if title:
        pdf.set_title(title)
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    return pdf


def write_pdf(path: Path, title: str, sections: Sections) -> Path:
    pdf = _pdf(title)
    for heading, paragraphs in sections:
        pdf.set_font("helvetica", style="B", size=14)
        pdf.multi_cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", size=12)
        for text in paragraphs:
            pdf.multi_cell(0, 8, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


def write_image_only_pdf(path: Path) -> Path:
    """A page of drawings and no text: what a scanned PDF looks like to a text extractor."""
    pdf = _pdf("Scanned")
    for i in range(5):
        pdf.rect(20 + 10 * i, 20 + 10 * i, 100, 40, style="F")
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


def write_encrypted_pdf(path: Path) -> Path:
    pdf = _pdf("Secret")
    pdf.set_encryption(owner_password="owner", user_password="needs-this")
    pdf.multi_cell(0, 8, "The vault combination is written here.")
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


def write_pptx(path: Path, title: str, sections: Sections) -> Path:
    from pptx import Presentation
    from pptx.shapes.placeholder import SlidePlaceholder

    deck = Presentation()
    deck.core_properties.title = title
    for heading, paragraphs in sections:  # a slide each
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        title_shape, body = slide.shapes.title, slide.placeholders[1]
        assert title_shape is not None and isinstance(body, SlidePlaceholder)  # layout 1: "Title and Content"
        title_shape.text = heading
        body.text = "\n".join(paragraphs)
    path.parent.mkdir(parents=True, exist_ok=True)
    deck.save(str(path))
    return path


def write_xlsx(path: Path, rows: list[list[str]]) -> Path:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    assert sheet is not None  # a new workbook has one sheet
    sheet.title = "Ports"
    for row in rows:
        sheet.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save(path)
    return path


def write_zip_bomb_docx(path: Path, inflated_bytes: int) -> Path:
    """A DOCX-shaped archive with one member that inflates to `inflated_bytes` of zeros."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", b"\0" * inflated_bytes)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())
    return path
