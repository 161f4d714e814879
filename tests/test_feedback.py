"""Feedback rows -> calibration labels: the merge rules, on rows as the feedback table holds them."""

from stores.feedback import FeedbackRow, labels_from_feedback


def row(query, verdict, documents=(), cited=()):
    return FeedbackRow(session_id="s", turn=1, verdict=verdict, query=query, documents=list(documents), cited=list(cited))


def test_good_cites_are_relevant_and_bad_documents_are_not():
    rows = [
        row("q1", "good", documents=["a.md", "b.md"], cited=["a.md"]),
        row("q2", "bad", documents=["c.md", "d.md"], cited=["c.md"]),
        row("q3", "good", documents=["e.md"]),  # cited nothing: says nothing about documents
        row("q1", "bad", documents=["a.md", "f.md"]),  # someone else disliked q1's answer
        row("q1", "good", documents=["g.md"], cited=["g.md", "a.md"]),
    ]
    assert labels_from_feedback(rows) == [
        {"query": "q1", "relevant": ["a.md", "g.md"], "not_relevant": ["f.md"]},  # a.md was also called relevant
        {"query": "q2", "relevant": [], "not_relevant": ["c.md", "d.md"]},
    ]
    assert labels_from_feedback([]) == []
