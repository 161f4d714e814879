"""The graph pages: one offline file, hostile names kept as text, and a real browser draws them without errors."""

import json
import re
import shutil
import subprocess

from conftest import service_missing

from executor.agent.knowledge_graph_page import render, render_graph_data
from executor.stores.knowledge_graph import GraphEdge, GraphNode, GraphPath

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
HOSTILE = "</script><img src=x onerror=alert(1)>"


def path(*hops) -> GraphPath:
    """path("A", ("DEPENDS_ON", 0.9), "B", ...)"""
    names, rels = hops[::2], hops[1::2]
    nodes = [GraphNode(name=n, type="Software") for n in names]
    edges = [GraphEdge(type=t, source=a, target=b, weight=w) for (t, w), a, b in zip(rels, names, names[1:])]
    score = 1.0
    for _, w in rels:
        score *= w
    return GraphPath(nodes=nodes, edges=edges, score=score)


PATHS = [
    path("ComfyUI", ("DEPENDS_ON", 0.9), "Docker"),
    path("ComfyUI", ("DEPENDS_ON", 0.9), "Docker", ("RELATED_TO", 0.8), "Kubernetes"),
    path("ComfyUI", ("CO_OCCURS", 0.25), "ERR_CERT_DATE_INVALID"),
    path("ComfyUI", ("CO_OCCURS", 0.25), "Docker Compose"),
    path("ComfyUI", ("REFERENCES", 0.5), HOSTILE),
]
GRAPH_DATA = {
    "nodes": [{"name": n, "type": "Software", "in_query": n == "ComfyUI"} for n in ("ComfyUI", "Docker", "Redis")],
    "edges": [
        {"source": "ComfyUI", "target": "Docker", "type": "DEPENDS_ON", "weight": 0.9},
        {"source": "Docker", "target": "Redis", "type": "CO_OCCURS", "weight": 0.2},
    ],
}
RESULTS = [  # two chunks of one document, graded differently, and one chunk of another
    {"doc_key": "a.md", "title": "A", "relevance_level": "REFERENCE", "knowledge_bases": ["sample"]},
    {"doc_key": "a.md", "title": "A", "relevance_level": "HIGHLY_RELEVANT", "knowledge_bases": ["other"]},
    {"doc_key": "b.md", "title": "B", "relevance_level": "REFERENCE", "knowledge_bases": ["sample"]},
]


def graph_json(page: str) -> dict:
    raw = re.search(r"<script type='application/json' id='graph-data'>(.*?)</script>", page, re.S).group(1)
    return json.loads(raw)


def test_a_page_is_one_offline_file_with_the_drawing_library_inlined():
    page = render("ComfyUI — sample", "ComfyUI", PATHS)
    assert "vis-network" in page and "new vis.Network" in page
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=|@import", page)  # nothing fetched


def test_hostile_names_stay_text():
    page = render("t", "ComfyUI", PATHS)
    assert HOSTILE not in page  # neither in the table (escaped) nor in the data (\\u003c)
    assert html_escaped(HOSTILE) in page
    assert HOSTILE in [n["label"] for n in graph_json(page)["nodes"]]


def html_escaped(text: str) -> str:
    import html

    return html.escape(text)


def test_the_question_entity_is_highlighted_and_pinned_and_weights_are_labelled():
    data = graph_json(render("t", "ComfyUI", PATHS))
    centre = next(n for n in data["nodes"] if n["id"] == "ComfyUI")
    assert centre["fixed"] and (centre["x"], centre["y"]) == (0, 0) and centre["borderWidth"] == 3
    assert not any(n.get("fixed") for n in data["nodes"] if n["id"] != "ComfyUI")
    labels = {(e["from"], e["to"]): e["label"] for e in data["edges"]}
    assert labels[("ComfyUI", "Docker")] == "DEPENDS_ON 0.90" and labels[("ComfyUI", "Docker Compose")] == "0.25"


def test_kg_page_lists_each_document_once_with_its_best_grade_and_centres_the_question():
    page = render_graph_data("q", GRAPH_DATA, RESULTS)
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", page)
    assert rows == [("A — a.md", "HIGHLY_RELEVANT · other, sample"), ("B — b.md", "REFERENCE · sample")]
    pinned = [n["id"] for n in graph_json(page)["nodes"] if n.get("fixed")]
    assert pinned == ["ComfyUI"]


def test_a_query_that_found_nothing_draws_nothing():
    page = render_graph_data("q", {"nodes": [], "edges": []}, [])
    assert graph_json(page) == {"nodes": [], "edges": []}
    assert "nothing found" in page


def browse(page_path, tmp_path) -> tuple[dict, "object"]:
    """(<body> attributes after the scripts ran, screenshot pixels) from headless Chromium."""
    if CHROMIUM is None:
        service_missing("no Chromium installed (apt-get install chromium)")
    common = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--window-size=1280,860",
        "--virtual-time-budget=15000",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ]
    dom = subprocess.run([*common, "--dump-dom", page_path.as_uri()], capture_output=True, text=True, timeout=120)
    body = re.search(r"<body([^>]*)>", dom.stdout)
    assert body, dom.stderr[-2000:]
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', body.group(1)))
    shot = tmp_path / "shot.png"
    subprocess.run([*common, f"--screenshot={shot}", page_path.as_uri()], capture_output=True, timeout=120, check=True)
    import matplotlib.image

    return attrs, matplotlib.image.imread(shot)


def test_chromium_draws_the_neighbourhood_without_errors(tmp_path):
    page = tmp_path / "comfy.html"
    page.write_text(render("ComfyUI — sample", "ComfyUI", PATHS), encoding="utf-8")
    attrs, pixels = browse(page, tmp_path)
    assert "data-errors" not in attrs, attrs.get("data-errors")
    assert attrs.get("data-ready") == "6"  # every node drawn, layout settled
    drawing = pixels[80:800, 0:800, :3]  # the canvas, left of the table
    ink = (drawing.sum(axis=2) < 2.9).mean()  # share of pixels that are not white
    assert ink > 0.01, f"the drawing is blank ({ink:.4f} of the pixels have ink)"


def test_chromium_shows_an_empty_result_as_a_sentence_not_an_error(tmp_path):
    page = tmp_path / "empty.html"
    page.write_text(render_graph_data("q", {"nodes": [], "edges": []}, []), encoding="utf-8")
    attrs, _ = browse(page, tmp_path)
    assert "data-errors" not in attrs and attrs.get("data-ready") == "0"
