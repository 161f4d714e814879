"""Self-contained HTML pages (inline SVG, nothing fetched from the network) that draw graph data.

Nodes sit on rings around a centre; edges are drawn with their type and
direction. Hovering a node or edge shows its details.
"""

from __future__ import annotations

import html
import math
from collections import defaultdict

from stores.graph import GraphEdge, GraphPath

WIDTH, HEIGHT, RING = 960, 720, 150
COLORS = {
    "DEPENDS_ON": "#d9480f", "REFERENCES": "#1971c2", "CO_OCCURS": "#868e96",
    "CONFLICTS_WITH": "#c92a2a", "DERIVED_FROM": "#5f3dc4", "RELATED_TO": "#2b8a3e",
}


def layout(center: str, paths: list[GraphPath]) -> dict[str, tuple[float, float, int]]:
    """name -> (x, y, hop): rings by hop, nodes spread evenly on their ring."""
    hop: dict[str, int] = {center: 0}
    for p in paths:
        for i, node in enumerate(p.nodes):
            hop[node.name] = min(hop.get(node.name, i), i)
    rings: dict[int, list[str]] = defaultdict(list)
    for name, h in sorted(hop.items(), key=lambda kv: (kv[1], kv[0])):
        rings[h].append(name)
    cx, cy = WIDTH / 2, HEIGHT / 2
    pos = {center: (cx, cy, 0)}
    for h, names in rings.items():
        if h == 0:
            continue
        for i, name in enumerate(names):
            angle = 2 * math.pi * i / len(names) + h * 0.4
            pos[name] = (cx + RING * h * math.cos(angle), cy + RING * h * 0.8 * math.sin(angle), h)
    return pos


def render(title: str, center: str, paths: list[GraphPath]) -> str:
    """A neighbourhood: rings by hop distance from `center`, and the paths listed under the drawing."""
    types: dict[str, str | None] = {}
    edges: dict[tuple[str, str, str], GraphEdge] = {}
    for p in paths:
        for node in p.nodes:
            types.setdefault(node.name, node.type)
        for e in p.edges:
            edges[(e.source, e.type, e.target)] = e
    rows = [(p.summary(), f"{p.score:.3f}") for p in sorted(paths, key=lambda p: -p.score)]
    return _page(title, layout(center, paths), types, list(edges.values()), ("path", "score"), rows)


def render_graph_data(title: str, graph_data: dict, results: list[dict]) -> str:
    """query_knowledge_graph's nodes and edges: the best-connected node in the middle, the rest around it."""
    edges = [GraphEdge(type=e["type"], source=e["source"], target=e["target"], weight=e["weight"])
             for e in graph_data["edges"]]
    degree: dict[str, int] = defaultdict(int)
    for e in edges:
        degree[e.source] += 1
        degree[e.target] += 1
    types = {n["name"]: n.get("type") for n in graph_data["nodes"]}
    pos: dict[str, tuple[float, float, int]] = {}
    if types:
        center = max(types, key=lambda n: (degree[n], n))
        others = sorted((n for n in types if n != center), key=lambda n: (-degree[n], n))
        inner, outer = others[:12], others[12:]
        pos[center] = (WIDTH / 2, HEIGHT / 2, 0)
        for ring, names in ((1, inner), (2, outer)):
            for i, name in enumerate(names):
                angle = 2 * math.pi * i / len(names)
                pos[name] = (WIDTH / 2 + RING * ring * math.cos(angle), HEIGHT / 2 + RING * ring * 0.8 * math.sin(angle), ring)
    rows = [(f"{r['title']} — {r['doc_key']}", f"{r['relevance_level']} · {', '.join(r['knowledge_bases'])}")
            for r in results]
    return _page(title, pos, types, edges, ("document", "level · knowledge bases"), rows)


def _page(title, pos, types, edges, headers, rows) -> str:
    esc = html.escape
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" role="img">',
        # userSpaceOnUse: the arrowhead keeps its size on thick (heavy) edges; refX puts its tip on the circle
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="23" refY="5" markerWidth="10" markerHeight="10" '
        'markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#495057"/>'
        "</marker></defs>",
    ]
    for e in edges:
        if e.source not in pos or e.target not in pos:
            continue
        (x1, y1, _), (x2, y2, _) = pos[e.source], pos[e.target]
        color = COLORS.get(e.type, "#495057")
        parts.append(
            f'<g class="edge"><title>{esc(e.source)} -{esc(e.type)}-> {esc(e.target)} (weight {e.weight:.2f})</title>'
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" '
            f'stroke-width="{1 + 3 * e.weight:.1f}" marker-end="url(#arrow)" opacity="0.8"/>'
            # co-occurrence is the bulk of the edges: its colour says enough, a label on each would bury the rest
            + ("" if e.type == "CO_OCCURS" else
               f'<text x="{(x1 + x2) / 2:.1f}" y="{(y1 + y2) / 2 - 4:.1f}" font-size="10" fill="{color}" '
               f'text-anchor="middle">{esc(e.type)}</text>')
            + "</g>"
        )
    for name, (x, y, h) in pos.items():
        fill = "#ffd43b" if h == 0 else ("#a5d8ff" if h == 1 else "#d0ebff")
        parts.append(
            f'<g class="node"><title>{esc(name)} ({esc(types.get(name) or "entity")}, hop {h})</title>'
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{18 if h == 0 else 13}" fill="{fill}" stroke="#1c7ed6"/>'
            f'<text x="{x:.1f}" y="{y + 30:.1f}" font-size="12" text-anchor="middle">{esc(name)}</text></g>'
        )
    parts.append("</svg>")
    table = "".join(f"<tr><td>{esc(a)}</td><td>{esc(b)}</td></tr>" for a, b in rows)
    legend = " ".join(f'<span style="color:{c}">■ {t}</span>' for t, c in COLORS.items())
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{esc(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}"
        "td,th{border:1px solid #dee2e6;padding:4px 8px;text-align:left}</style></head><body>"
        f"<h1>{esc(title)}</h1><p>{legend}</p>{''.join(parts)}"
        f"<table><tr><th>{esc(headers[0])}</th><th>{esc(headers[1])}</th></tr>{table}</table></body></html>"
    )
