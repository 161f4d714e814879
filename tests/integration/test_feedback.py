"""Feedback rows -> calibration labels: the merge rules, on rows as the feedback table holds them."""

from executor.stores.feedback import FeedbackRow, labels_from_feedback


def row(query, verdict, documents=(), cited=()):
    return FeedbackRow(
        session_id="s", turn=1, verdict=verdict, query=query, documents=list(documents), cited=list(cited)
    )


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


def test_calibrate_learns_from_good_answers_as_labels(tmp_path):
    """`calibrate --feedback KB`: questions users called well answered join the label files; bad ones do not
    become off-topic questions (a bad answer does not say the KB cannot answer)."""
    import json

    import yaml
    from conftest import REPO, run_cli

    from executor.stores.database import Database
    from executor.stores.feedback import FeedbackStore, TurnRecord

    home = tmp_path / "home"
    assert run_cli(home, "ingest").returncode == 0
    rows = yaml.safe_load((REPO / "evals" / "labels" / "sample.yaml").read_text(encoding="utf-8"))
    labels = tmp_path / "labels.yaml"
    labels.write_text(yaml.safe_dump(rows[:12], allow_unicode=True), encoding="utf-8")
    db = Database(f"sqlite:///{home / 'executor.db'}")
    store = FeedbackStore(db)
    store.record(
        TurnRecord(
            "s1",
            1,
            "Redis 缓存的过期时间怎么设置？",
            "sample",
            documents=["infrastructure/redis-cache-expiry.md"],
            cited=["infrastructure/redis-cache-expiry.md"],
        ),
        "good",
    )
    store.record(TurnRecord("s1", 2, "证书快过期了怎么办？", "sample", documents=["api/authentication.md"]), "bad")
    db.engine.dispose()
    out = run_cli(home, "calibrate", "--labels", str(labels), "--kb", "sample", "--feedback", "sample", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["labels"] == {str(labels): 12, "feedback on sample": 1}
    assert data["held_out"]["overall"]["questions"] == 13 and data["held_out"]["overall"]["off_topic"] == 0
    run_cli(home, "graph", "stop")
