import shutil

import pytest
from conftest import make_runtime
from doc_fixtures import write_kb
from extras import bge_model_path

from executor.core.errors import BackendError, InputError
from executor.core.settings import SAMPLE_KB_PATH
from executor.retrieval.ingest import ingest


def test_reingest_is_idempotent(sample_rt):
    before = sample_rt.vectors.count("sample")
    report = ingest(sample_rt, SAMPLE_KB_PATH, "sample", progress=False)
    assert (report.documents, report.chunks) == (len(sample_rt.catalog.documents("sample")), before)
    assert (report.added, report.changed, report.removed, report.unchanged) == (0, 0, 0, report.documents)


def test_changed_document_replaces_its_chunks_and_removed_document_goes(sample_rt, tmp_path):
    root = tmp_path / "kb"
    shutil.copytree(SAMPLE_KB_PATH / "deployment", root / "deployment")
    first = ingest(sample_rt, root, "scratch", progress=False)
    assert first.added == first.documents == 8

    doc = root / "deployment" / "comfyui-deployment.md"
    doc.write_text(doc.read_text(encoding="utf-8").split("## 模型文件")[0], encoding="utf-8")  # shorter now
    (root / "deployment" / "ci-pipeline.md").unlink()
    second = ingest(sample_rt, root, "scratch", progress=False)
    assert (second.changed, second.removed, second.unchanged, second.documents) == (1, 1, 6, 7)

    # what the KB's live vectors hold, whichever collection they are in (a first ingest promotes a generation)
    rows = [
        {"doc_key": doc_key, "text": text}
        for _, doc_key, _, text in sample_rt.vectors.texts("scratch")
        if doc_key.startswith("deployment/")
    ]
    keys = {r["doc_key"] for r in rows}
    assert "deployment/ci-pipeline.md" not in keys
    comfy = [r for r in rows if r["doc_key"] == "deployment/comfyui-deployment.md"]
    assert comfy and not any("模型文件" in r["text"] for r in comfy)  # old chunks are gone
    assert len(rows) == second.chunks
    r = sample_rt.lookup_service.lookup("CI pipeline stages promotion", "scratch-s", kb="scratch")
    assert "deployment/ci-pipeline.md" not in {d.doc_key for d in r.documents}


def test_missing_folder_and_empty_folder_are_clear_errors(sample_rt, tmp_path):
    with pytest.raises(InputError, match="no such folder"):
        ingest(sample_rt, tmp_path / "nope", "scratch2", progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no documents to ingest"):
        ingest(sample_rt, tmp_path / "empty", "scratch2", progress=False)
    with pytest.raises(InputError, match="invalid knowledge base name"):
        ingest(sample_rt, SAMPLE_KB_PATH, "Bad-Name; drop", progress=False)
    assert sample_rt.catalog.get("scratch2") is None and not sample_rt.vectors.has("scratch2")


def test_a_different_embedder_is_a_clear_error_until_rebuild(tmp_path):
    """USE-built KB searched with a FlagEmbedding MiniLM model: refused, not garbage; --rebuild re-embeds."""
    minilm = bge_model_path()
    kb = write_kb(
        tmp_path / "kb",
        {
            "ops/disk.md": "---\nkeywords: [ERR_DISK_FULL]\n---\n# Disk full\n\nFree space with du and df.",
            "ops/restart.md": "# Restarting pods\n\nUse kubectl rollout restart to restart a deployment.",
        },
    )
    use_rt = make_runtime(tmp_path / "home")
    ingest(use_rt, kb, "mini", progress=False)
    use_rt.close()

    flag_rt = make_runtime(tmp_path / "home", embedder="flag", embedder_path=minilm)
    try:
        assert flag_rt.embedder.name == "flag:model" and flag_rt.embedder.dim == 384
        with pytest.raises(BackendError, match=r"use-multilingual-v3 \(512-d\).*flag:model \(384-d\)"):
            flag_rt.lookup_service.lookup("disk full", "s1", kb="mini")
        with pytest.raises(BackendError, match="--rebuild"):
            ingest(flag_rt, kb, "mini", progress=False)
        report = ingest(flag_rt, kb, "mini", rebuild=True, progress=False)
        assert report.embedder == "flag:model" and report.chunks == 2
        flag_rt.lookup_service._checked.clear()
        r = flag_rt.lookup_service.lookup("how do I restart a deployment with kubectl", "s2", kb="mini")
        assert r.primary[0].doc_key == "ops/restart.md"
    finally:
        flag_rt.close()
