"""Real files of every ingested format, written by the libraries people make them with (no binary fixtures)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path


def write_docx(path: Path, title: str, heading: str, paragraphs: list[str]) -> Path:
    from docx import Document

    doc = Document()
    doc.core_properties.title = title
    doc.add_heading(heading, level=1)
    for text in paragraphs:
        doc.add_paragraph(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    return path


def _pdf(title: str | None = None):
    from fpdf import FPDF

    pdf = FPDF()
    if title:
        pdf.set_title(title)
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    return pdf


def write_pdf(path: Path, title: str, lines: list[str]) -> Path:
    pdf = _pdf(title)
    for line in lines:
        pdf.multi_cell(0, 8, line)
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


def write_pptx(path: Path, title: str, slide_title: str, body: str) -> Path:
    from pptx import Presentation

    deck = Presentation()
    deck.core_properties.title = title
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = slide_title
    slide.placeholders[1].text = body
    path.parent.mkdir(parents=True, exist_ok=True)
    deck.save(path)
    return path


def write_xlsx(path: Path, rows: list[list[str]]) -> Path:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
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


HTML_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Wiki: Payment gateway on-call</title>
<script>var tracking = "noise that is not content";</script><style>body {color: red}</style></head>
<body><nav>Home / Space</nav>
<h1>Payment gateway on-call</h1>
<p>When the payment gateway returns HTTP 502, fail over to the standby acquirer with
<code>pgctl failover --to standby</code> and page the payments team.</p>
<h2>Escalation</h2>
<table><tr><th>Tier</th><th>Team</th></tr><tr><td>1</td><td>payments-oncall</td></tr></table>
</body></html>
"""

MDX_PAGE = """---
title: Installing the widget operator
sidebar_label: Widget operator
description: How to install the widget operator with Helm and verify it.
tags: [operator, widgets]
---
import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';
import DocCardList from '@theme/DocCardList';

export const meta = {
  owner: "platform",
};

<!-- TODO: screenshots -->

# Installing the widget operator

<Tabs>
<TabItem value="helm" label="Helm chart">

Install the widget operator with `helm install widgets ./widget-operator`.

</TabItem>
<TabItem value="kubectl" label="Plain manifests">

Apply the manifests with `kubectl apply -f widget-operator.yaml`.

</TabItem>
</Tabs>

:::warning[Cluster admin]
The widget operator needs cluster-admin rights to register its CRDs.
:::

```bash
export WIDGET_NAMESPACE=widgets
import_data --from '<Tabs>'
```

<DocCardList />
"""

HUGO_PAGE = """+++
title = "Rotating TLS certificates"
tags = ["tls", "certificates"]
+++

Certificates for the ingress expire every 90 days.

{{< note >}}
Rotate the ingress certificate a week before expiry, never on a Friday.
{{< /note >}}

{{% alert title="Danger" %}}
Deleting the issuer revokes every certificate it signed.
{{% /alert %}}
"""
