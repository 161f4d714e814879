"""Issue 28, on the sample KB: a rephrasing sends none of the next-best pages (the eval report's count of blocked
must-run lookups is in test_evals.py)."""

import uuid


def session() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def test_a_rephrasing_sends_no_next_best_page_scoring_clearly_below_the_held_one(sample_rt):
    lookup, s = sample_rt.lookup_service.lookup, session()
    first = lookup("Docker Compose 本地开发环境", s, batch="m1")
    assert first.primary[0].doc_key == "deployment/docker-compose.md" and first.primary[0].content

    again = lookup("本地怎么一次启动 MySQL、Redis 和 Kafka？", s, batch="m2")
    # its best page is the held one, pointed at again without its text
    assert again.primary[0].doc_key == "deployment/docker-compose.md" and again.primary[0].already_returned
    # the slow-query page is the next-best page, scoring below the held one by more than the width of "as relevant"
    # on the sample KB's own band: it is not about starting services locally, and is not sent
    assert "troubleshooting/slow-query.md" in again.details["weaker_than_held"]
    assert "troubleshooting/slow-query.md" not in {k for _, k in sample_rt.memory.sent_documents(s)}
