import pytest
from doc_fixtures import write_kb

from executor.core.errors import InputError
from executor.core.settings import SAMPLE_KB_PATH
from executor.retrieval.chunking import chunk_markdown
from executor.retrieval.documents import parse_text
from executor.retrieval.keywords import KeywordIndex
from executor.retrieval.sources import load_documents


def test_ascii_terms_match_whole_words_only():
    idx = KeywordIndex([("tls.md", ["TLS"]), ("err.md", ["ERR_TIMEOUT"]), ("pool.md", ["connection pool"])])
    assert idx.match("what is TLSv1") == {}
    assert set(idx.match("tls handshake")) == {"tls.md"}
    assert set(idx.match("ERR_TIMEOUT 是什么？")) == {"err.md"}
    assert idx.match("ERR_TIMEOUT_X") == {}
    assert set(idx.match("Connection  Pool exhausted")) == {"pool.md"}


def test_chinese_terms_match_inside_a_sentence_and_across_spaces():
    idx = KeywordIndex([("pool.md", ["连接池"]), ("hikari.md", ["HikariCP 参数"]), ("one.md", ["池"])])
    assert set(idx.match("数据库连接池怎么配置？")) == {"pool.md"}  # one-character terms are ignored
    assert set(idx.match("HikariCP参数有哪些")) == {"hikari.md"}


def test_front_matter_is_optional(tmp_path):
    root = write_kb(
        tmp_path,
        {"ops/no-meta.md": "# Disk alerts\n\nWhen ERR_DISK_FULL fires...\n\n## Cleanup steps\n\nrm old logs\n"},
    )
    [doc] = load_documents(root).documents
    assert doc.title == "Disk alerts"  # first heading
    assert doc.domain == "ops"  # folder
    assert doc.keywords == ["Cleanup steps", "ERR_DISK_FULL"]  # headings and error codes
    assert [c.chunk_id for c in doc.chunks()] == ["ops/no-meta.md#0", "ops/no-meta.md#1"]


def test_chunks_are_bounded_and_stable():
    text = "# T\n\n" + "\n\n".join("段落" * 100 for _ in range(10))
    a, b = chunk_markdown("T", text), chunk_markdown("T", text)
    assert a == b
    assert all(len(c) <= 800 for c in a)
    assert all(c.startswith("T\n") for c in a)  # every chunk carries its heading path
    assert "".join(a).count("段落") >= 1000  # nothing lost (overlap may repeat some)


def test_doc_keys_with_quotes_are_refused(tmp_path):
    root = write_kb(tmp_path, {'bad"name.md': "# x", "good.md": "# fine"})
    loaded = load_documents(root)
    assert [d.doc_key for d in loaded.documents] == ["good.md"]
    assert any(w.startswith('bad"name.md: file names may hold') for w in loaded.warnings)
    with pytest.raises(InputError, match="file names"):
        parse_text('bad"name.md', "# x")


def test_sample_kb_covers_what_the_product_promises():
    docs = load_documents(SAMPLE_KB_PATH).documents
    assert len(docs) >= 40
    domains = {d.domain for d in docs}
    assert {"infrastructure", "api", "troubleshooting", "deployment", "security", "observability"} <= domains
    assert all(sum(d.domain == dom for d in docs) >= 5 for dom in domains)
    zh = [d for d in docs if any("\u4e00" <= ch <= "\u9fff" for ch in d.title)]
    assert 10 <= len(zh) <= len(docs) - 10  # both languages, in earnest
    rels = {(r["source"], r["type"], r["target"]) for d in docs for r in d.relations}
    for needed in [
        ("ComfyUI", "DEPENDS_ON", "Docker"),
        ("Docker", "RELATED_TO", "Kubernetes"),
        ("Kubernetes", "REFERENCES", "Helm"),
        ("MySQL", "CO_OCCURS", "HikariCP"),
    ]:
        assert needed in rels
    owners = [d.doc_key for d in docs if "ERR_TIMEOUT" in d.keywords]
    assert owners == ["troubleshooting/err-timeout.md"]  # unique error code -> PRECISE is reachable


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_a_title_yaml_reads_as_a_number_that_is_not_finite_is_a_warning_not_the_title_nan(value):
    doc = parse_text("ops/disk.md", f"---\ntitle: {value}\n---\n# Disk full\n\nFree space first.\n")
    assert doc.title == "Disk full"
    assert [w for w in doc.warnings if w.startswith("front matter 'title' is YAML's")], doc.warnings
