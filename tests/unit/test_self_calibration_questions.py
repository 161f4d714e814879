"""Question generation for self-calibration (executor/retrieval/self_calibration.py): what a KB's own evidence is
made of."""

from executor.core.relevance import page_key
from executor.retrieval.self_calibration import OTHER_STACKS, Source, generate, near_named, needs_refit
from executor.retrieval.vocabulary import Vocabulary, query_terms

EN = Source(
    "en/queue.md",
    "Worker queue full",
    ["ERR_QUEUE_FULL"],
    ["ERR_QUEUE_FULL"],
    "# Worker queue full\n\nThe API answers `ERR_QUEUE_FULL` when more than ten thousand jobs are waiting "
    "in the queue for a worker.\n\n## Why jobs pile up\n\nA slow downstream service makes every worker "
    "wait for its answer before it takes the next job.\n",
)
ZH = Source(
    "zh/queue.md",
    "任务队列已满",
    [],
    [],
    "# 任务队列已满\n\n当等待中的任务超过一万个时，接口返回 `ERR_QUEUE_FULL`，需要扩容工作进程或者在网关限流。\n",
)
OTHER = Source(
    "en/retries.md",
    "Retry policy",
    [],
    [],
    "# Retry policy\n\nFailed jobs are retried three times with exponential backoff starting at two "
    "seconds, then moved to the dead-letter list.\n",
)


def test_questions_name_their_page_and_its_translation_and_never_copy_a_sentence_unheld():
    questions = generate([EN, ZH, OTHER])
    assert questions
    for label, held in questions:
        assert set(label.relevant) == (
            {"en/queue.md", "zh/queue.md"} if "queue" in label.relevant[0] else {"en/retries.md"}
        )
        if held is not None:  # a sentence question: graded without the chunk it was made of
            assert held.split("#")[0] in label.relevant
    # an identifier both language versions use is still one page's: asked about, labelled with both
    assert any("ERR_QUEUE_FULL" in label.query for label, _ in questions)
    assert any(held for _, held in questions)
    assert {page_key(k) for k in ("en/queue.md", "zh/queue.md")} == {"queue.md"}


def test_generation_is_bounded_and_repeatable():
    assert len(generate([EN, ZH, OTHER], limit=3)) == 3
    assert generate([EN, ZH, OTHER]) == generate([EN, ZH, OTHER])


def test_near_field_questions_name_another_stacks_tool_on_a_page_subject_and_never_one_the_kb_writes():
    pages = [EN, ZH, OTHER]
    # a KB whose text names two of the listed tools: they are its own, never asked as another stack's
    written = Source("en/ci.md", "CI", [], [], "# CI\n\nWe build with Bazel and deploy to OpenShift.\n")
    vocabulary = Vocabulary.build([(p.doc_key, p.body) for p in [*pages, written]])
    questions = near_named([*pages, written], vocabulary, limit=12)
    assert len(questions) == 12 and questions == near_named([*pages, written], vocabulary, limit=12)
    assert not any("Bazel" in q or "OpenShift" in q for q in questions)
    for q in questions:
        named = query_terms(q, vocabulary).unknown_products
        assert len(named) == 1 and named[0] in OTHER_STACKS, q
    # in both languages, each on a page's title
    assert any("怎么" in q or "注意" in q for q in questions) and any(q.startswith(("How", "Where")) for q in questions)


class Row:
    def __init__(self, model, revision: int = 1):
        self.grading_model, self.revision = model, revision


def test_refit_only_without_a_human_model_and_when_enough_changed():
    assert needs_refit(Row(None), documents=100, moved=0)
    assert not needs_refit(Row({"calibrated_by": "self"}), documents=100, moved=5)
    assert needs_refit(Row({"calibrated_by": "self"}), documents=100, moved=10)
    assert not needs_refit(Row({"calibrated_by": "labels", "thresholds": {}}), documents=100, moved=100)


def test_what_the_ingests_since_the_fit_moved_adds_up():
    # three ingests of 4% each: the third refits (it never did: each was under the share on its own)
    assert not needs_refit(Row({"calibrated_by": "self", "revision": 4, "moved": 4}, revision=5), 100, moved=4)
    assert needs_refit(Row({"calibrated_by": "self", "revision": 5, "moved": 8}, revision=6), 100, moved=4)


def test_an_ingest_that_never_said_what_it_moved_makes_the_next_refit():
    """Hostile21 finding 9: an ingest killed after its documents were recorded (revision 6) and before the model
    was: the next ingest (revision 7) moves nothing, and refits all the same."""
    assert needs_refit(Row({"calibrated_by": "self", "revision": 5, "moved": 0}, revision=7), 100, moved=0)
    assert not needs_refit(Row({"calibrated_by": "self", "revision": 6, "moved": 0}, revision=7), 100, moved=0)
