"""A page is `named` by the query (and so PRECISE, its own subject) when the query holds a keyword of two words or
more that no other page lists; not when most pages' text uses that phrase's words too. On pip's docs one research
page lists `pip install` as a keyword, every page runs it, and the off-topic `uv sync 和 uv pip install 有什么区别？`
was PRECISE on that page. Real Milvus Lite and the shipped embedder, the KB ingested in the test."""

import pytest
from conftest import make_runtime
from doc_fixtures import write_kb

from executor.retrieval.ingest import ingest
from executor.stores.catalog import version

TOOLS = ["requests", "numpy", "rich", "httpx", "attrs", "click"]
PAGES = {
    f"guides/{name}.md": f"# Installing {name}\n\nRun `pip install {name}` in the project's virtual environment, then "
    f"import {name} in your code. To upgrade later, run `pip install --upgrade {name}`.\n"
    for name in TOOLS
}
PAGES["research/priorities.md"] = (
    "---\ntitle: Feature priorities survey\nkeywords: [pip install, survey, canary wheels]\n---\n# Feature priorities "
    "survey\n\nWe asked 400 users which features matter most; `pip install` speed came first. A second round asked "
    "about canary wheels, prebuilt wheels published to a test index a week before a release.\n"
)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    rt = make_runtime(tmp_path_factory.mktemp("home"), self_calibrate=False)
    ingest(rt, write_kb(tmp_path_factory.mktemp("docs"), PAGES), "tools", progress=False)
    row = rt.catalog.require("tools")
    # the ranker's levels with REFERENCE at its lowest, so the level says what `named` alone decides
    t = rt.settings.kb_thresholds(rt.embedder.name, row).model_copy(update={"reference_threshold": 0.001})

    def grade(query: str):
        return rt.grader.grade("tools", version(row), query, rt.embedder.embed_query(query), t)

    yield grade
    rt.close()


def test_a_keyword_phrase_every_page_uses_names_no_page(graded):
    result = graded("uv sync 和 uv pip install 有什么区别？")
    assert result.level != "PRECISE"
    assert not any(c.named for c in result.candidates)


def test_a_keyword_phrase_only_its_page_uses_names_it(graded):
    result = graded("what are canary wheels")
    assert result.level == "PRECISE"
    assert result.candidates[0].doc_key == "research/priorities.md" and result.candidates[0].named
