"""Structural chunks: heading paths, whole code blocks and tables, bounded size with overlap, doc-site clean-up."""

import re

import pytest
from doc_fixtures import HUGO_PAGE, MDX_PAGE

from evals import HELM
from executor.retrieval.chunking import ATOMIC_MAX_CHARS, MAX_CHUNK_CHARS, OVERLAP_CHARS, chunk_markdown
from executor.retrieval.doc_site import clean_doc_site
from executor.retrieval.documents import parse_text
from executor.retrieval.sources import load_documents

HELM_DOCS = HELM / "docs"

PROSE = "Helm renders templates before it installs anything, and it checks dependencies first. "


def test_every_chunk_carries_its_heading_path():
    md = (
        "# Charts\n\nIntro.\n\n## Chart dependencies\n\nUse `helm dependency update`.\n\n"
        "### The charts/ directory\n\nVendored charts.\n"
    )
    chunks = chunk_markdown("Charts", md)
    assert [c.split("\n")[0] for c in chunks] == [
        "Charts",
        "Charts › Chart dependencies",
        "Charts › Chart dependencies › The charts/ directory",
    ]
    assert "helm dependency update" in chunks[1] and "Vendored" in chunks[2]


def test_a_hash_inside_code_is_not_a_heading():
    md = "# Setup\n\n```bash\n# install the plugin\nhelm plugin install x\n```\n"
    doc = parse_text("ops/setup.md", md)
    assert doc.keywords == [] and [c.text.split("\n")[0] for c in doc.chunks()] == ["Setup"]


def test_code_blocks_and_tables_are_never_split_in_the_middle():
    code = "```yaml\n" + "\n".join(f"key{i}: value-{i}" for i in range(60)) + "\n```"  # ~1,100 chars
    table = "| flag | meaning |\n|---|---|\n" + "\n".join(f"| --opt{i} | does thing {i} |" for i in range(40))
    assert MAX_CHUNK_CHARS < len(code) < ATOMIC_MAX_CHARS and MAX_CHUNK_CHARS < len(table) < ATOMIC_MAX_CHARS
    md = f"# Ref\n\n{PROSE * 5}\n\n{code}\n\n{PROSE * 3}\n\n{table}\n\n{PROSE}"
    chunks = chunk_markdown("Ref", md)
    assert sum(code in c for c in chunks) == 1 and sum(table in c for c in chunks) == 1
    for c in chunks:  # every chunk's fences are balanced
        assert c.count("```") % 2 == 0


def test_a_huge_code_block_is_cut_between_lines_and_each_piece_refenced():
    code = "```text\n" + "\n".join(f"line {i:05d} of a very long log" for i in range(400)) + "\n```"
    chunks = chunk_markdown("Log", f"# Log\n\n{code}")
    assert len(chunks) > 1
    for c in chunks:
        body = c.split("\n", 1)[1]
        assert body.startswith("```text\n") and body.endswith("\n```")
    lines = [ln for c in chunks for ln in c.split("\n") if ln.startswith("line ")]
    assert lines == [f"line {i:05d} of a very long log" for i in range(400)]  # all there, in order, none cut


@pytest.mark.parametrize("sentence", [PROSE, "部署前先检查依赖，然后渲染模板。"])
def test_size_is_bounded_in_characters_with_overlap_in_both_languages(sentence):
    paragraph = sentence * (2 * MAX_CHUNK_CHARS // len(sentence))  # one paragraph, two chunks long
    chunks = chunk_markdown("T", f"# T\n\n{paragraph}\n\n{paragraph}")
    assert len(chunks) >= 4 and all(len(c) <= MAX_CHUNK_CHARS for c in chunks)
    for prev, nxt in zip(chunks, chunks[1:]):
        carried = nxt.split("\n", 1)[1].split("\n\n")[0]
        assert carried.startswith("…") and len(carried) <= OVERLAP_CHARS + 1
        assert prev.rstrip().endswith(carried[1:].strip())  # the next chunk opens with the end of the last


def test_mdx_components_imports_exports_admonitions_and_comments_are_cleaned():
    doc = parse_text("ops/widgets.mdx", MDX_PAGE, "mdx")
    text = "\n".join(c.text for c in doc.chunks())
    assert doc.title == "Installing the widget operator" and doc.keywords == ["operator", "widgets"]
    for noise in [
        "import Tabs",
        "from '@theme",
        "<Tabs>",
        "</TabItem>",
        "<DocCardList",
        "export const",
        "owner:",
        "TODO",
    ]:
        assert noise not in text.replace("import_data --from '<Tabs>'", ""), noise
    assert "Helm chart" in text and "helm install widgets ./widget-operator" in text  # tab labels and content kept
    assert "Warning: Cluster admin\nThe widget operator needs cluster-admin" in text
    assert "How to install the widget operator with Helm" in text  # the description is content
    assert "export WIDGET_NAMESPACE=widgets\nimport_data --from '<Tabs>'" in text  # code left exactly as written


def test_hugo_shortcodes_and_toml_front_matter():
    doc = parse_text("security/tls.md", HUGO_PAGE)
    text = doc.chunks()[0].text
    assert doc.title == "Rotating TLS certificates" and doc.keywords == ["tls", "certificates"]
    assert "{{" not in text and "Note:\nRotate the ingress certificate" in text
    assert "Alert: Danger\nDeleting the issuer" in text


def test_prose_placeholders_that_look_like_tags_are_kept():
    md = "Replace <CHARTNAME> with the chart name; `ngin<TAB>` completes.\n\n<Foo>kept</Foo>"
    cleaned = clean_doc_site(md)
    assert "<CHARTNAME>" in cleaned and "`ngin<TAB>`" in cleaned and "<Foo>" not in cleaned and "kept" in cleaned


@pytest.mark.skipif(not HELM_DOCS.is_dir(), reason="the Helm corpus (shared/corpora/helm) is not on this machine")
def test_helm_corpus_chunks_hold_no_mdx_markup():
    loaded = load_documents(HELM_DOCS)
    chunks = [c for d in loaded.documents for c in d.chunks()]
    assert len(loaded.documents) > 100 and not loaded.warnings
    assert not [c.chunk_id for c in chunks if re.search(r"^import\s+\S.*\sfrom\s+['\"]", c.text, re.M)]
    assert not [c.chunk_id for c in chunks if "<DocCardList" in c.text]
    index = next(d for d in loaded.documents if d.doc_key == "en/topics/index.md")
    assert index.body.strip()  # the page's own text stays
    assert all(c.text.split("\n")[0].startswith(d.title) for d in loaded.documents for c in d.chunks())
