"""Self-contained HTML pages that draw graph data with vis-network, inlined: one file, nothing fetched.

vis-network 10.1.2 (Apache-2.0 OR MIT, from npm; `executor/agent/static/`) lays the
graph out by force with overlap avoidance (labels sit inside their boxes, so
boxes that do not overlap mean labels that do not), and gives zoom, pan and
drag. The question's entities are highlighted and pinned in the middle; every
edge is labelled with its type and weight; the table of paths or documents
sits beside the drawing. Data goes in as JSON with `<`, `>` and `&` escaped,
and vis-network draws labels on a canvas and tooltips as text, so hostile
names stay text.
"""

from __future__ import annotations

import html
import json
from functools import lru_cache
from pathlib import Path

from executor.stores.knowledge_graph import GraphPath

STATIC = Path(__file__).with_name("static")
COLORS = {
    "DEPENDS_ON": "#d9480f",
    "REFERENCES": "#1971c2",
    "CO_OCCURS": "#adb5bd",
    "CONFLICTS_WITH": "#c92a2a",
    "DERIVED_FROM": "#5f3dc4",
    "RELATED_TO": "#2b8a3e",
}
FOCUS, NEAR, FAR = "#ffd43b", "#a5d8ff", "#e7f5ff"  # the question's entities, one hop away, further
LEVEL_RANK = {"PRECISE": 0, "HIGHLY_RELEVANT": 1, "REFERENCE": 2}


@lru_cache(maxsize=1)
def _vis_network() -> str:
    return (STATIC / "vis-network.min.js").read_text(encoding="utf-8")


def render(title: str, center: str, paths: list[GraphPath]) -> str:
    """A neighbourhood of `center` (highlighted), and its paths, best first, beside the drawing."""
    hops: dict[str, int] = {center: 0}
    types: dict[str, str | None] = {}
    edges: dict[tuple[str, str, str], dict] = {}
    for p in paths:
        for i, node in enumerate(p.nodes):
            types.setdefault(node.name, node.type)
            hops[node.name] = min(hops.get(node.name, i), i)
        for e in p.edges:
            edges[(e.source, e.type, e.target)] = {
                "source": e.source,
                "target": e.target,
                "type": e.type,
                "weight": e.weight,
            }
    nodes = [{"name": n, "type": types.get(n), "hop": h, "focus": n == center} for n, h in hops.items()]
    rows = [(p.summary(), f"{p.score:.3f}") for p in sorted(paths, key=lambda p: -p.score)]
    note = f"{len(paths)} paths from {center}, score = product of edge weights"
    return _page(title, nodes, list(edges.values()), ("path", "score"), rows, note)


def render_graph_data(title: str, graph_data: dict, results: list[dict]) -> str:
    """query_knowledge_graph's nodes and edges around the entities the question names (highlighted, in the
    middle), and its documents, each once with its best grade."""
    names = [n["name"] for n in graph_data["nodes"]]
    # a node is an entity of one KB: two KBs that both know Redis draw two Redis nodes (by name alone they were one
    # id twice, which vis-network refuses: the page drew nothing), each edge between its own KB's nodes
    edges = [
        {**e, "source": _node_id(e.get("kb"), e["source"]), "target": _node_id(e.get("kb"), e["target"])}
        for e in graph_data["edges"]
    ]
    focus = {_node_id(n.get("kb"), n["name"]) for n in graph_data["nodes"] if n.get("in_query")}
    hops = _hops_from(focus, edges) if focus else {}
    nodes = []
    for n in graph_data["nodes"]:
        node_id = _node_id(n.get("kb"), n["name"])
        nodes.append(
            {
                "id": node_id,
                "name": n["name"],
                "type": n.get("type"),
                "hop": hops.get(node_id, 2),
                "focus": node_id in focus,
            }
        )
    docs: dict[str, dict] = {}  # results are chunks: a document appears once, with its best chunk's grade
    for r in results:
        d = docs.setdefault(r["doc_key"], {**r, "knowledge_bases": []})
        if LEVEL_RANK.get(r["relevance_level"], 9) < LEVEL_RANK.get(d["relevance_level"], 9):
            d["relevance_level"] = r["relevance_level"]
        d["knowledge_bases"] = sorted(set(d["knowledge_bases"]) | set(r["knowledge_bases"]))
    rows = [
        (f"{d['title']} — {d['doc_key']}", f"{d['relevance_level']} · {', '.join(d['knowledge_bases'])}")
        for d in docs.values()
    ]
    note = (
        f"{len(names)} entities, {len(graph_data['edges'])} relations, {len(docs)} documents"
        if names or docs
        else "nothing found: no documents and no graph for this question"
    )
    return _page(title, nodes, edges, ("document", "best grade · knowledge bases"), rows, note)


def _node_id(kb: str | None, name: str) -> str:
    """A drawn node's id: the entity's name, qualified by its KB when it has one (as query_knowledge_graph's ids)."""
    return f"{kb}:{name}" if kb else name


def _hops_from(start: set[str], edges: list[dict]) -> dict[str, int]:
    """Hop distance from the nearest start node, ignoring direction."""
    near: dict[str, set[str]] = {}
    for e in edges:
        near.setdefault(e["source"], set()).add(e["target"])
        near.setdefault(e["target"], set()).add(e["source"])
    hops, frontier = {n: 0 for n in start}, list(start)
    while frontier:
        nxt = []
        for n in frontier:
            for m in near.get(n, ()):
                if m not in hops:
                    hops[m] = hops[n] + 1
                    nxt.append(m)
        frontier = nxt
    return hops


def _vis_data(nodes: list[dict], edges: list[dict]) -> dict:
    focus = [n for n in nodes if n["focus"]]
    out_nodes = []
    for n in nodes:
        color = FOCUS if n["focus"] else NEAR if n["hop"] <= 1 else FAR
        item = {
            "id": n.get("id", n["name"]),
            "label": n["name"],
            "title": f"{n['name']} ({n.get('type') or 'entity'})",
            "color": {"background": color, "border": "#1c7ed6" if not n["focus"] else "#e67700"},
            "borderWidth": 3 if n["focus"] else 1,
            "font": {"size": 20 if n["focus"] else 16, "bold": n["focus"]},
        }
        if n["focus"]:  # pinned in the middle (side by side when the question names several)
            i = focus.index(n)
            item |= {"x": (i - (len(focus) - 1) / 2) * 260, "y": 0, "fixed": True}
        out_nodes.append(item)
    out_edges = []
    for e in edges:
        color = COLORS.get(e["type"], "#495057")
        # co-occurrence is most of the edges: its weight is enough; written relations also say what they are
        label = f"{e['weight']:.2f}" if e["type"] == "CO_OCCURS" else f"{e['type']} {e['weight']:.2f}"
        out_edges.append(
            {
                "from": e["source"],
                "to": e["target"],
                "label": label,
                "arrows": "to",
                "title": f"{e['source']} -{e['type']}-> {e['target']} (weight {e['weight']:.2f})",
                "color": {"color": color},
                "width": 1 + 3 * float(e["weight"]),
                "font": {"size": 13, "color": color, "strokeWidth": 4, "strokeColor": "#ffffff", "align": "top"},
                "dashes": e["type"] == "CO_OCCURS",
            }
        )
    return {"nodes": out_nodes, "edges": out_edges}


def _json_for_script(data) -> str:
    """JSON that cannot close its <script> element or start markup, whatever the names in it say."""
    text = json.dumps(data, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


OPTIONS = {
    "layout": {"randomSeed": 7, "improvedLayout": True},
    "nodes": {"shape": "box", "margin": 8, "widthConstraint": {"maximum": 220}},
    "edges": {"smooth": {"type": "dynamic"}},
    "physics": {
        "solver": "forceAtlas2Based",
        "forceAtlas2Based": {
            "gravitationalConstant": -100,
            "springLength": 150,
            "springConstant": 0.05,
            "avoidOverlap": 1,
        },
        "stabilization": {"iterations": 600, "fit": True},
    },
    "interaction": {"hover": True, "navigationButtons": True, "keyboard": True, "tooltipDelay": 150},
}

# errors (uncaught or logged) are kept on <body data-errors>, so a headless browser can check a page drew cleanly
SCRIPT = """
window.graphErrors = [];
function recordGraphError(text) {
  window.graphErrors.push(String(text));
  if (document.body) document.body.setAttribute('data-errors', window.graphErrors.join(' | '));
}
window.addEventListener('error', function (e) { recordGraphError(e.message); });
var consoleError = console.error;
console.error = function () {
  recordGraphError(Array.prototype.join.call(arguments, ' '));
  consoleError.apply(console, arguments);
};
"""

DRAW = """
(function () {
  var data = JSON.parse(document.getElementById('graph-data').textContent);
  var options = JSON.parse(document.getElementById('graph-options').textContent);
  var box = document.getElementById('graph');
  if (!data.nodes.length) { box.textContent = box.getAttribute('data-empty'); box.className += ' empty';
    document.body.setAttribute('data-ready', '0'); return; }
  var network = new vis.Network(box, {nodes: new vis.DataSet(data.nodes), edges: new vis.DataSet(data.edges)}, options);
  network.once('stabilizationIterationsDone', function () {
    network.setOptions({physics: false});  // dragging moves one node, not the whole drawing
    network.fit({animation: false});
    document.body.setAttribute('data-ready', String(data.nodes.length));
  });
})();
"""

STYLE = """
body{font-family:system-ui,sans-serif;margin:0;color:#212529}
header{padding:.6em 1.2em;border-bottom:1px solid #dee2e6}
h1{font-size:1.25em;margin:0 0 .2em}
.legend span{margin-right:1em;white-space:nowrap;font-size:.9em}
main{display:flex;flex-wrap:wrap;height:calc(100vh - 5.5em);min-height:480px}
#graph{flex:1 1 640px;min-width:360px;height:100%;border-right:1px solid #dee2e6}
#graph.empty{display:flex;align-items:center;justify-content:center;color:#868e96}
aside{flex:0 1 420px;overflow:auto;height:100%;padding:0 .8em}
table{border-collapse:collapse;width:100%;font-size:.9em}
td,th{border-bottom:1px solid #dee2e6;padding:4px 6px;text-align:left;vertical-align:top}
th{position:sticky;top:0;background:#f8f9fa}
"""


def _page(
    title: str, nodes: list[dict], edges: list[dict], headers: tuple[str, str], rows: list[tuple[str, str]], note: str
) -> str:
    esc = html.escape
    table = "".join(f"<tr><td>{esc(a)}</td><td>{esc(b)}</td></tr>" for a, b in rows)
    legend = "".join(f'<span style="color:{c}">━ {t}</span>' for t, c in COLORS.items())
    legend += (
        f'<span><span style="background:{FOCUS};padding:0 .4em;border:1px solid #e67700">the question</span></span>'
    )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{esc(title)}</title><style>{STYLE}</style><script>{SCRIPT}</script></head><body>"
        f"<header><h1>{esc(title)}</h1><div class='legend'>{legend}</div></header>"
        f"<main><div id='graph' data-empty='{esc(note)}' role='img' aria-label='{esc(note)}'></div>"
        f"<aside><p>{esc(note)}. Scroll to zoom, drag to pan or move a box.</p>"
        f"<table><tr><th>{esc(headers[0])}</th><th>{esc(headers[1])}</th></tr>{table}</table></aside></main>"
        f"<script type='application/json' id='graph-data'>{_json_for_script(_vis_data(nodes, edges))}</script>"
        f"<script type='application/json' id='graph-options'>{_json_for_script(OPTIONS)}</script>"
        f"<script>{_vis_network()}</script><script>{DRAW}</script></body></html>"
    )
