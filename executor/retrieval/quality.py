"""Retrieval quality over labelled questions: the figures a user checks before trusting a grade.

A question is answerable when its label lists relevant documents, off-topic
when the list is empty. Per language and overall:

- hit@1: the primary document (the one sent first) is relevant; no primary is a miss;
- recall@5: the share of a question's relevant documents among its five best-scored candidates;
- relevant returned: at least one document sent (primary or supplement) is relevant;
- PRECISE / HIGHLY_RELEVANT precision: the primary is relevant when the grade says so, with counts;
- PRECISE fires: the share of answerable questions graded PRECISE (a precision on three questions says little);
- answerable NONE: answerable questions graded "nothing found" (the LLM then tells the user the KB has nothing);
- off-topic NONE: off-topic questions graded "nothing found"; off-topic confident: graded PRECISE or HR.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from executor.core.relevance import Level

if TYPE_CHECKING:
    from executor.core.settings import Thresholds
    from executor.retrieval.grading import Graded

DOCUMENTS_SENT = 4  # the primary and up to three supplements, as lookup sends by default


class Question(BaseModel):
    query: str
    kb: str
    lang: str
    relevant: list[str]
    level: str | None = None
    primary: str | None = None
    returned: list[str] = Field(default_factory=list)
    top5: list[str] = Field(default_factory=list)

    def graded(self, g: Graded, t: Thresholds, documents_sent: int = DOCUMENTS_SENT) -> Question:
        self.level = g.level.value if g.level else None
        self.returned = [c.doc_key for c in g.relevant(t)][:documents_sent]
        self.primary = self.returned[0] if self.returned else None
        self.top5 = [c.doc_key for c in g.candidates[:5]]
        return self


class Figures(BaseModel):
    questions: int
    answerable: int
    off_topic: int
    hit_at_1: float | None
    recall_at_5: float | None
    relevant_returned: float | None
    precise_precision: float | None
    precise_count: int
    precise_fires: float | None = None
    answerable_none: float | None = None
    highly_relevant_precision: float | None
    highly_relevant_count: int
    off_topic_none: float | None
    off_topic_confident: int


class Quality(BaseModel):
    overall: Figures
    by_language: dict[str, Figures]
    by_kb: dict[str, dict[str, Figures]]  # kb -> "all" and each language
    questions: list[Question] = Field(default_factory=list, exclude=True)


def _share(hits: list[bool]) -> float | None:
    return round(sum(hits) / len(hits), 4) if hits else None


def figures(questions: list[Question]) -> Figures:
    answerable = [q for q in questions if q.relevant]
    off = [q for q in questions if not q.relevant]
    precise = [q.primary in q.relevant for q in answerable + off if q.level == Level.PRECISE]
    high = [q.primary in q.relevant for q in answerable + off if q.level == Level.HIGHLY_RELEVANT]
    return Figures(
        questions=len(questions),
        answerable=len(answerable),
        off_topic=len(off),
        hit_at_1=_share([q.primary in q.relevant for q in answerable]),
        recall_at_5=(
            round(
                sum(len(set(q.top5) & set(q.relevant)) / len(set(q.relevant)) for q in answerable) / len(answerable), 4
            )
            if answerable
            else None
        ),
        relevant_returned=_share([bool(set(q.returned) & set(q.relevant)) for q in answerable]),
        precise_precision=_share(precise),
        precise_count=len(precise),
        precise_fires=_share([q.level == Level.PRECISE for q in answerable]),
        answerable_none=_share([q.level is None for q in answerable]),
        highly_relevant_precision=_share(high),
        highly_relevant_count=len(high),
        off_topic_none=_share([q.level is None for q in off]),
        off_topic_confident=sum(q.level in (Level.PRECISE, Level.HIGHLY_RELEVANT) for q in off),
    )


def measure(questions: list[Question]) -> Quality:
    def split(qs: list[Question]) -> dict[str, Figures]:
        return {lang: figures([q for q in qs if q.lang == lang]) for lang in sorted({q.lang for q in qs})}

    kbs = list(dict.fromkeys(q.kb for q in questions))
    return Quality(
        overall=figures(questions),
        by_language=split(questions),
        by_kb={kb: {"all": figures(on := [q for q in questions if q.kb == kb]), **split(on)} for kb in kbs},
        questions=questions,
    )
