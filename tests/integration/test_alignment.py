"""Entity alignment: prefixes, typos, case and width, Chinese, and what must not match; then on the sample graph."""

import pytest

from executor.retrieval.alignment import EntityAligner, query_terms
from executor.retrieval.keywords import normalize

NAMES = {
    n.casefold(): (n, "Software")
    for n in [
        "ComfyUI",
        "Kubernetes",
        "Prometheus",
        "Promtail",
        "PostgreSQL",
        "Docker",
        "Docker Compose",
        "HikariCP",
        "API Gateway",
        "RollingUpdate",
        "Nginx",
        "连接池监控",
    ]
}
NAMES["k8s"] = ("Kubernetes", "Software")  # an alias


def aligned(text, **kw):
    return [(a.name, a.how) for a in EntityAligner(NAMES, None, **kw).align(text)]


def test_names_compare_case_and_width_insensitively():
    assert normalize("ＣｏｍｆｙＵＩ  Ｐｏｒｔ") == normalize("comfyui port") == "comfyui port"


def test_prefixes_typos_widths_and_aliases():
    assert aligned("comfy 部署") == [("ComfyUI", "prefix")]
    assert aligned("ＣＯＭＦＹＵＩ 显存不够") == [("ComfyUI", "exact")]  # full-width letters
    assert aligned("kubernets pod 一直重启") == [("Kubernetes", "fuzzy")]
    assert aligned("K8S 集群") == [("Kubernetes", "exact")]  # an alias, another case
    assert aligned("how do I tune hikari") == [("HikariCP", "prefix")]
    assert aligned("连接池监 怎么看") == [("连接池监控", "prefix")]  # Chinese prefixes too


def test_what_must_not_match():
    assert aligned("ngnix 502 bad gateway") == [("Nginx", "fuzzy")]  # not "API Gateway": a typo keeps its first letter
    assert aligned("how to roll back a release") == []  # "roll" is too short a share of RollingUpdate
    assert aligned("the docs for the login page") == []
    assert aligned("kubernets", fuzzy_cutoff=0.99) == []
    assert query_terms("ERR_CERT_EXPIRED on the ingress")[-4:] == ["err_cert_expired", "on", "the", "ingress"]


def test_embedding_step_uses_the_threshold():
    import numpy as np

    vectors = {"ComfyUI": [1.0, 0.0], "Kubernetes": [0.0, 1.0]}

    def embed(texts):  # a stand-in embedder: "image ui" points at ComfyUI, anything else nowhere in particular
        return np.array([vectors.get(t, [0.8, 0.6] if t == "image ui" else [0.6, -0.8]) for t in texts])

    names = {"comfyui": ("ComfyUI", None), "kubernetes": ("Kubernetes", None)}
    assert [(a.name, a.how) for a in EntityAligner(names, embed, embedding_threshold=0.75).align("image ui")] == [
        ("ComfyUI", "embedding")
    ]
    assert EntityAligner(names, embed, embedding_threshold=0.85).align("image ui") == []


def test_comfy_finds_comfyui_in_the_sample_graph(sample_rt):
    """The issue's example: "comfy 部署" names no entity exactly, yet graph expansion starts from ComfyUI."""
    assert sample_rt.known_entities.in_text("sample", "comfy 部署") == ["ComfyUI"]
    assert sample_rt.known_entities.in_text("sample", "ＣＯＭＦＹ 部署") == ["ComfyUI"]
    result = sample_rt.lookup_service.lookup("comfy 部署", "align-comfy")
    assert sample_rt.expander.expand(result).seeds[0] == "ComfyUI"


def test_search_text_adds_only_the_names_a_query_does_not_spell_out():
    from executor.retrieval.alignment import with_names

    assert with_names("comfy 部署", ["ComfyUI"]) == ("comfy 部署 ComfyUI", ["ComfyUI"])
    assert with_names("ＣＯＭＦＹＵＩ 部署", ["ComfyUI"]) == (
        "ＣＯＭＦＹＵＩ 部署",
        [],
    )  # already named, in another width
    assert with_names("Docker 和 comfy", ["Docker", "ComfyUI", "ComfyUI"]) == ("Docker 和 comfy ComfyUI", ["ComfyUI"])
    assert with_names("今天天气怎么样", []) == ("今天天气怎么样", [])


@pytest.fixture(scope="module")
def cli_home(tmp_path_factory):
    from conftest import ingested_home, run_cli

    home = ingested_home(tmp_path_factory, "align-home")
    yield home
    run_cli(home, "graph", "stop")


def test_a_loose_name_is_looked_up_as_the_entity_it_means(cli_home):
    """`executor lookup "comfy 部署"`: the lookup searches the aligned name too, so the ComfyUI deployment guide
    comes back graded (it was NONE while only graph expansion used the alignment); off-topic stays NONE."""
    import json

    from conftest import run_cli

    def lookup(query):
        r = run_cli(cli_home, "lookup", query, "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    comfy = lookup("comfy 部署")
    assert comfy["relevance_level"] in ("REFERENCE", "HIGHLY_RELEVANT", "PRECISE")
    assert comfy["primary"][0]["doc_key"] == "deployment/comfyui-deployment.md"
    typo = lookup("kubernets 滚动更新怎么做")
    assert typo["relevance_level"] in ("REFERENCE", "HIGHLY_RELEVANT", "PRECISE")
    assert typo["primary"][0]["doc_key"] == "deployment/kubernetes-rolling-update.md"
    for off_topic in ("今天天气怎么样", "How do I bake sourdough bread?"):
        assert lookup(off_topic)["relevance_level"] == "NONE", off_topic  # nothing found


def test_entity_linking_precision_and_recall_on_the_labels(sample_rt):
    """The measured claim of the README: on held-out labels, alignment raises recall over exact names, precision
    stays >= 0.9."""
    from evals.entity_linking import LABELS, evaluate, load_link_labels

    labels = load_link_labels(LABELS)
    assert len(labels) >= 60 and any(label.entities == [] for label in labels)
    report = evaluate(labels, sample_rt.embedder.embed_documents)
    exact = report["methods"]["exact"]["test"]
    full = report["methods"]["exact + prefix + fuzzy + embedding"]["test"]
    assert full["recall"] > exact["recall"] + 0.15 and full["precision"] >= 0.9
    assert report["fuzzy_cutoff"] == pytest.approx(sample_rt.settings.entity_fuzzy_cutoff)
    assert report["embedding_threshold"] == pytest.approx(sample_rt.settings.entity_embedding_threshold)
