"""What the invocation log says about retrieval: level and dedup distributions, similarities, lookups per session.

Plain SQLAlchemy (GROUP BY, COUNT, a Float column): the same code on SQLite,
Postgres and MySQL.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select

from stores.database import Database, ToolInvocation

LOOKUP = "lookup_knowledge"
BINS = [round(i / 10, 1) for i in range(11)]  # similarity histogram edges 0.0 .. 1.0


def invocation_stats(db: Database, session: str | None = None, since: datetime | None = None) -> dict:
    t = ToolInvocation

    def scoped(stmt):
        stmt = stmt.where(t.tool_name == LOOKUP)
        if session is not None:
            stmt = stmt.where(t.session_id == session)
        if since is not None:
            stmt = stmt.where(t.created_at >= since)
        return stmt

    level = func.coalesce(t.relevance_level, "NONE")
    with db.session() as s:
        levels = dict(s.execute(scoped(select(level, func.count()).where(t.error.is_(None)).group_by(level))).all())
        reasons = dict(s.execute(scoped(select(t.dedup_reason, func.count()).where(t.dedup_reason.is_not(None))
                                        .group_by(t.dedup_reason))).all())
        sims = [v for (v,) in s.execute(scoped(select(t.top_similarity).where(t.top_similarity.is_not(None))))]
        per_session = dict(s.execute(scoped(select(t.session_id, func.count()).group_by(t.session_id))).all())
        errors = s.execute(scoped(select(func.count()).where(t.error.is_not(None)))).scalar_one()
    counts = [0] * (len(BINS) - 1)
    for v in sims:
        counts[min(int(max(v, 0.0) * 10), 9)] += 1
    sessions = sorted(per_session.values())
    return {
        "lookups": sum(levels.values()) + errors,
        "errors": errors,
        "relevance_levels": dict(sorted(levels.items())),
        "dedup_reasons": dict(sorted(reasons.items())),
        "similarity_histogram": {"bins": BINS, "counts": counts},
        "similarity_mean": round(sum(sims) / len(sims), 4) if sims else None,
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

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    (a, b), (c, d) = axes
    a.bar(list(stats["relevance_levels"]), list(stats["relevance_levels"].values()), color="#1971c2")
    a.set_title("relevance levels")
    b.bar(list(stats["dedup_reasons"]) or ["none"], list(stats["dedup_reasons"].values()) or [0], color="#e8590c")
    b.set_title("dedup reasons")
    hist = stats["similarity_histogram"]
    c.bar([x + 0.05 for x in hist["bins"][:-1]], hist["counts"], width=0.09, color="#2b8a3e")
    c.set_xlim(0, 1)
    c.set_title("top similarity per lookup")
    per_session = sorted(stats["lookups_per_session"].values(), reverse=True)
    d.bar(range(len(per_session)), per_session, color="#5f3dc4")
    d.set_title(f"lookups per session ({stats['sessions']} sessions)")
    d.set_xlabel("sessions, most lookups first")
    for ax in (a, b):
        ax.tick_params(axis="x", labelrotation=20)
    fig.suptitle(f"executor stats: {stats['lookups']} lookups")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
