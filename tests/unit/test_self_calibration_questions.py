"""Question generation for self-calibration (executor/retrieval/self_calibration.py): what a KB's own evidence is
made of."""

from executor.core.relevance import page_key
from executor.retrieval.self_calibration import Source, generate, needs_refit

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


class Row:
    def __init__(self, model):
        self.grading_model = model


def test_refit_only_without_a_human_model_and_when_enough_changed():
    assert needs_refit(Row(None), documents=100, moved=0)
    assert not needs_refit(Row({"calibrated_by": "self"}), documents=100, moved=5)
    assert needs_refit(Row({"calibrated_by": "self"}), documents=100, moved=10)
    assert not needs_refit(Row({"calibrated_by": "labels", "thresholds": {}}), documents=100, moved=100)
