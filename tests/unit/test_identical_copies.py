"""Identical pages are one answer (issue 30, hostile16 finding 10): which documents are copies of each other
(`grading.copies`), and self-calibration's questions labelled with every copy of their page."""

from executor.core.settings import Thresholds
from executor.retrieval.grading import Graded, copies
from executor.retrieval.ranking import Candidate
from executor.retrieval.self_calibration import Source, generate
from executor.retrieval.vocabulary import QueryTerms

BODY = (
    "# Worker queue full\n\nThe API answers `ERR_QUEUE_FULL` when more than ten thousand jobs are waiting "
    "in the queue for a worker.\n\n## Why jobs pile up\n\nA slow downstream service makes every worker "
    "wait for its answer before it takes the next job.\n"
)
OTHER = Source(
    "retries.md",
    "Retry policy",
    [],
    [],
    "# Retry policy\n\nFailed jobs are retried three times with exponential backoff starting at two "
    "seconds, then moved to the dead-letter list.\n",
)


def test_copies_are_the_same_parsed_text_or_the_same_file_bytes():
    rows = {
        "b.md": ("c1", "f1"),
        "a.md": ("c1", "f1"),  # the same file under another name
        "old/c.md": ("c2", "f1"),  # the same bytes, another folder: its domain (and so its hash) differs
        "d.md": ("c2", None),  # the same parse as c, its file's hash unknown
        "e.md": ("c3", None),
        "f.md": ("c4", "f4"),
    }
    assert copies(rows) == {
        "a.md": "a.md",
        "b.md": "a.md",
        "old/c.md": "a.md",
        "d.md": "a.md",
        "e.md": "e.md",
        "f.md": "f.md",
    }


def test_a_question_on_a_page_with_copies_is_labelled_with_every_copy():
    page = Source("a.md", "Worker queue full", ["ERR_QUEUE_FULL"], ["ERR_QUEUE_FULL"], BODY)
    copy = Source("b.md", "Worker queue full", ["ERR_QUEUE_FULL"], ["ERR_QUEUE_FULL"], BODY, copy_of="a.md")
    questions = generate([page, copy, OTHER])
    on_page = [label for label, _ in questions if "retries.md" not in label.relevant]
    assert on_page
    # labelled with the page alone, a question whose copy the grader put first counted as a miss
    assert all(set(label.relevant) == {"a.md", "b.md"} for label in on_page)
    # an identifier of the page and its copy is still one page's: asked about
    assert any("ERR_QUEUE_FULL" in label.query for label in on_page)


def test_a_result_sends_one_copy_of_a_text_and_the_first_one_when_they_tie():
    # a.md and b.md are the same text (b.md's first copy is a.md), found in the store's order: b.md first
    candidates = [
        Candidate("b.md", "Page", "d", similarity=0.6, features={"similarity": 0.6}, copy_of="a.md"),
        Candidate("a.md", "Page", "d", similarity=0.6, features={"similarity": 0.6}, copy_of="a.md"),
        Candidate("other.md", "Other", "d", similarity=0.5, features={"similarity": 0.5}),
    ]
    t = Thresholds(highly_relevant_threshold=0.7, reference_threshold=0.4, supplement_threshold=0.3)
    graded = Graded(candidates=candidates, query_terms=QueryTerms({}, 1.0, [])).regrade(t)
    # it was b.md and a.md, the same text twice
    assert [c.doc_key for c in graded.relevant(t)] == ["a.md", "other.md"]
