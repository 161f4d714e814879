"""What the invocation log says about retrieval: level and dedup distributions, similarities, lookups per session.

Plain SQLAlchemy (GROUP BY, COUNT, a Float column): the same code on SQLite,
Postgres and MySQL. By default only real use counts: rows from `eval` and
`calibrate` runs are left out unless asked for by source.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, or_, select

from executor.stores.database import Database, ToolInvocation
from executor.stores.invocation_log import SOURCES, TEST_SOURCES

LOOKUP = "lookup_knowledge"
BINS = [round(i / 10, 1) for i in range(11)]  # similarity histogram edges 0.0 .. 1.0
# best to worst, so tables and plots read in the order the grading decides
LEVEL_ORDER = ("PRECISE", "HIGHLY_RELEVANT", "REFERENCE", "DEDUPED", "NONE")
UNKNOWN_SOURCE = "unknown"  # rows written before sources were recorded, with no telling session id


def check_sources(sources: list[str] | None) -> list[str] | None:
    """None (real use), or names from SOURCES (plus 'unknown'); 'all' means every row."""
    if not sources:
        return None
    if sources == ["all"]:
        return [*SOURCES, UNKNOWN_SOURCE]
    bad = [s for s in sources if s not in (*SOURCES, UNKNOWN_SOURCE)]
    if bad:
        from executor.core.errors import InputError

        raise InputError(f"unknown source {bad[0]!r} (known: {', '.join(SOURCES)}, {UNKNOWN_SOURCE}, all)")
    return sources


def _in_sources(sources: list[str] | None):
    t = ToolInvocation
    if sources is None:
        return or_(t.source.is_(None), t.source.not_in(TEST_SOURCES))
    named = [s for s in sources if s != UNKNOWN_SOURCE]
    clause = t.source.in_(named)
    return or_(clause, t.source.is_(None)) if UNKNOWN_SOURCE in sources else clause


def _ordered_levels(levels: dict[str, int]) -> dict[str, int]:
    rank = {name: i for i, name in enumerate(LEVEL_ORDER)}
    return dict(sorted(levels.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))


def invocation_stats(
    db: Database,
    session: str | None = None,
    since: datetime | None = None,
    sources: list[str] | None = None,
    thresholds: dict[str, float] | None = None,
) -> dict:
    """`sources`: None for real use (all but eval and calibrate); `thresholds` are reported with the histogram."""
    t = ToolInvocation
    sources = check_sources(sources)

    def scoped(stmt):
        stmt = stmt.where(t.tool_name == LOOKUP, _in_sources(sources))
        if session is not None:
            stmt = stmt.where(t.session_id == session)
        if since is not None:
            stmt = stmt.where(t.created_at >= since)
        return stmt

    level = func.coalesce(t.relevance_level, "NONE")
    source = func.coalesce(t.source, UNKNOWN_SOURCE)
    with db.session() as s:
        levels = dict(s.execute(scoped(select(level, func.count()).where(t.error.is_(None)).group_by(level))).all())
        reasons = dict(
            s.execute(
                scoped(select(t.dedup_reason, func.count()).where(t.dedup_reason.is_not(None)).group_by(t.dedup_reason))
            ).all()
        )
        sims = [
            v
            for (v,) in s.execute(scoped(select(t.top_similarity).where(t.top_similarity.is_not(None))))
            if v is not None
        ]
        per_session = dict(s.execute(scoped(select(t.session_id, func.count()).group_by(t.session_id))).all())
        by_source = dict(s.execute(scoped(select(source, func.count()).group_by(source))).all())
        errors = s.execute(scoped(select(func.count()).where(t.error.is_not(None)))).scalar_one()
    counts = [0] * (len(BINS) - 1)
    for v in sims:
        counts[min(int(max(v, 0.0) * 10), 9)] += 1
    sessions = sorted(per_session.values())
    return {
        "sources": sources or "real use (all but eval and calibrate)",
        "lookups": sum(levels.values()) + errors,
        "errors": errors,
        "by_source": dict(sorted(by_source.items())),
        "relevance_levels": _ordered_levels(levels),
        "dedup_reasons": dict(sorted(reasons.items())),
        "similarity_histogram": {"bins": BINS, "counts": counts},
        "similarity_mean": round(sum(sims) / len(sims), 4) if sims else None,
        "thresholds": thresholds or {},
        "lookups_per_session": per_session,
        "sessions": len(per_session),
        "max_lookups_in_a_session": sessions[-1] if sessions else 0,
        "median_lookups_per_session": sessions[len(sessions) // 2] if sessions else 0,
    }


GRAPH_TOOLS = ("graph_expand", "query_knowledge_graph", "navigate_graph")


def traversal_cache_stats(db: Database, session: str | None = None, since: datetime | None = None) -> dict:
    """Hits and misses of the graph traversal cache, totalled over the graph calls' logged tallies."""
    t = ToolInvocation
    stmt = select(t.retrieval_details).where(t.tool_name.in_(GRAPH_TOOLS), t.retrieval_details.is_not(None))
    if session is not None:
        stmt = stmt.where(t.session_id == session)
    if since is not None:
        stmt = stmt.where(t.created_at >= since)
    hits = misses = 0
    with db.session() as s:
        for (details,) in s.execute(stmt):  # JSON read in Python: the same code on every database
            tally = (details or {}).get("traversal_cache") or {}
            hits, misses = hits + int(tally.get("hits", 0)), misses + int(tally.get("misses", 0))
    total = hits + misses
    return {"hits": hits, "misses": misses, "hit_rate": round(hits / total, 4) if total else None}


def plot_stats(stats: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    (a, b), (c, d) = axes
    a.bar(list(stats["relevance_levels"]), list(stats["relevance_levels"].values()), color="#1971c2")
    a.set_title("relevance levels")
    b.bar(list(stats["dedup_reasons"]) or ["none"], list(stats["dedup_reasons"].values()) or [0], color="#e8590c")
    b.set_title("dedup reasons")
    hist = stats["similarity_histogram"]
    c.bar([x + 0.05 for x in hist["bins"][:-1]], hist["counts"], width=0.09, color="#2b8a3e")
    for (name, value), style in zip(sorted(stats.get("thresholds", {}).items()), ("--", ":")):
        c.axvline(value, color="#212529", linestyle=style, linewidth=1.2, label=f"{name} {value:.2f}")
    if stats.get("thresholds"):
        c.legend(loc="upper right", fontsize=9)
    c.set_xlim(0, 1)
    c.set_title("top similarity per lookup")
    c.set_xlabel("similarity")
    per_session = sorted(stats["lookups_per_session"].values(), reverse=True)
    d.bar(range(1, len(per_session) + 1), per_session, color="#5f3dc4")
    d.set_title(f"lookups per session ({stats['sessions']} sessions)")
    d.set_xlabel("sessions, most lookups first")
    for ax in (a, b, c, d):  # every y axis counts lookups: whole numbers only
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    d.xaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in (a, b):
        ax.tick_params(axis="x", labelrotation=20)
    fig.suptitle(
        f"executor stats: {stats['lookups']} lookups "
        f"({stats['sources'] if isinstance(stats['sources'], str) else ', '.join(stats['sources'])})"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
