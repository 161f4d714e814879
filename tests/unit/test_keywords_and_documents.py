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


# terminal escapes (OSC, CSI, C1 CSI), a NUL, CRLF, a form feed, a pasted image and a long encoded run: what
# sanitize_text and cut_encoded take out of a page
HOSTILE = (
    "# Deploy \x1b]0;owned\x07guide \x1b[31mnow\x1b[0m\r\n\r\nStep one\x00 runs.\fPage two "
    "![shot](data:image/png;base64," + "iVBORw0KGgo" * 40 + ")\r\n\r\n"
    "token " + "aGVsbG8xMjM0NTY3ODkw" * 60 + " end\n\n## Rollback\n\n\u009b2JRoll back with `helm rollback`.\n"
)


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_a_file_is_cleaned_once_and_reads_as_parse_text_reads_it(tmp_path, monkeypatch, fmt):
    # parse_source cleaned a file's text (sanitize_text, cut_encoded) to measure it, then parse_text cleaned it again
    from executor.retrieval import documents, sources

    text = HOSTILE if fmt == "md" else f"<html><body><pre>{HOSTILE}</pre></body></html>"
    path = tmp_path / f"deploy.{fmt}"
    path.write_bytes(text.encode("utf-8"))
    source = sources.SourceFile(path, path.name, fmt, path.stat().st_size)
    converted = text if fmt == "md" else sources.convert(path, fmt, path.read_bytes(), 10**8).markdown
    expected = parse_text(path.name, converted, fmt)
    twice = parse_text(path.name, documents.clean_text(converted), fmt)  # what the two cleanings made

    cleaned: list[int] = []
    clean = documents.clean_text

    def counted(raw: str) -> str:
        cleaned.append(len(raw))
        return clean(raw)

    monkeypatch.setattr(documents, "clean_text", counted)
    monkeypatch.setattr(sources, "clean_text", counted)
    doc = sources.parse_source(source, path.read_bytes(), sources.SourceLimits())

    assert len(cleaned) == 1
    assert (doc.title, doc.keywords, doc.body, doc.warnings) == (
        expected.title,
        expected.keywords,
        expected.body,
        expected.warnings,
    )
    assert [c.text for c in doc.chunks()] == [c.text for c in expected.chunks()] == [c.text for c in twice.chunks()]
    # and the page was hostile: what the cleaning takes out is out
    assert not any(ch in doc.body for ch in "\x1b\x00\r\f\u009b"), doc.body
    assert "characters of encoded data left out]" in doc.body and "data:image/png;base64..." in doc.body
