"""Calibrating the repeat rule (executor/retrieval/repeats.py) from labelled pairs of lookups.

Each label is an earlier query of a session, a later one, and `repeat` or `distinct`. Every query is
looked up once for real (a dry run: no session memory, no log), so a pair gets what the rule sees at
run time: the similarity of the two query embeddings, whether the earlier lookup found anything, and
whether the later lookup's best document is one the earlier lookup returned.

The rule that picks a threshold (printed with the table): the lowest threshold (highest recall)
whose precision is at least MIN_PRECISION, because a false block costs a user an answer while a
missed repeat costs one search (the per-turn budget and the PRECISE stop still bound a storm).
It is applied separately to pairs whose earlier lookup found documents (`overlap-threshold`) and to
pairs whose earlier lookup found nothing (`miss-overlap-threshold`).

The session rule needs no threshold of its own: a later lookup whose best page (ranked before the session's
pages are set aside) is one the earlier lookup returned, with no new page about as relevant
(`retrieval.repeats.as_relevant`), is answered from the session. Its figures are reported with the
repeat rule's, held out the same way, and at several widths of "about as relevant" (`BANDS`) so that the
shipped `WEAKER_BANDS` can be judged. Label files on several knowledge bases are scored together (the
thresholds are per embedder, not per KB).

Figures are held out: the pairs are split into FOLDS groups by their earlier query (pairs that share
an earlier query stay together), each group is judged with thresholds picked on the other groups,
and the counts are pooled. The thresholds written with `--write` are picked on all pairs.
"""

from __future__ import annotations

import uuid
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np
from pydantic import BaseModel, Field

from executor.core.relevance import page_key
from executor.core.settings import update_config
from executor.retrieval.label_files import load_label_list
from executor.retrieval.repeats import WEAKER_BANDS, answer_pages, as_relevant, weaker_margin

if TYPE_CHECKING:
    from executor.core.settings import Settings
    from executor.retrieval.lookup import LookupService
    from executor.stores.catalog import Catalog
    from executor.stores.embedders import Embedder


class RepeatStores(Protocol):
    """What scoring repeat labels uses; the composition root (`agent.runtime.Runtime`) is one."""

    # the runtime builds each on first use; as cached properties here too, since pyright (1.1.414) does not
    # match a cached_property against a property
    @property
    def settings(self) -> Settings: ...
    @cached_property
    def catalog(self) -> Catalog: ...
    @cached_property
    def embedder(self) -> Embedder: ...
    @cached_property
    def lookup_service(self) -> LookupService: ...


MIN_PRECISION = 0.95
FOLDS = 5
GRID = [round(0.10 + i * 0.01, 2) for i in range(86)]  # 0.10 .. 0.95
BANDS = (0.0, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0)  # widths of "about as relevant" reported, in REFERENCE-HR bands
RULE = (
    f"each threshold: highest recall with precision >= {MIN_PRECISION} on the pairs it is fitted on "
    f"(ties to the higher threshold); figures: {FOLDS}-fold, grouped by earlier query, held out"
)


class RepeatLabel(BaseModel):
    earlier: str = Field(min_length=1)
    later: str = Field(min_length=1)
    label: Literal["repeat", "distinct"]


class PairScore(BaseModel):
    kb: str = "sample"
    earlier: str
    later: str
    label: str
    similarity: float
    earlier_found: bool  # the earlier lookup found documents
    same_documents: bool  # the later lookup's best document is one the earlier lookup returned, or it found none
    all_documents_sent: bool  # everything the later lookup returns came with the earlier one: doc_retrieved
    # the later lookup's best page is one the earlier returned and no new page is about as relevant, per width
    # of "about as relevant" (str(band) -> answered from the session)
    from_session: dict[str, bool] = {}

    def answered_from_session(self, bands: float = WEAKER_BANDS) -> bool:
        return self.from_session.get(str(bands), False)


class Row(BaseModel):
    threshold: float
    precision: float
    recall: float
    predicted: int


class Choice(BaseModel):
    threshold: float
    precision: float
    recall: float
    met_rule: bool


class HeldOut(BaseModel):
    precision: float
    recall: float
    true_positives: int
    false_positives: int
    false_negatives: int
    fold_thresholds: list[dict[str, float]]
    false_blocks: list[dict]  # distinct pairs a held-out fold would have blocked
    # the session's whole dedup: this rule, or doc_retrieved (which needs no threshold)
    with_doc_retrieved: dict[str, float]
    # this rule, or the later lookup answered from the session's pages (the rule that runs today), at the shipped
    # width and (`by_band`) at the others
    with_session_pages: dict[str, float] = {}
    by_band: list[dict] = []


class RepeatCalibration(BaseModel):
    embedder: str
    kb: str  # the knowledge bases of the label files, comma-separated
    pairs: int
    repeats: int
    rule: str = RULE
    rows_found: list[Row]
    rows_miss: list[Row]
    overlap: Choice
    miss_overlap: Choice
    held_out: HeldOut
    current: dict
    scores: list[PairScore]


def load_repeat_labels(path: Path) -> list[RepeatLabel]:
    return load_label_list(path, RepeatLabel, "{earlier, later, label} pairs")


def score_pairs(rt: RepeatStores, kb: str, labels: list[RepeatLabel]) -> list[PairScore]:
    """Look every query up once (dry run) and embed it; a pair's features are what the rules see."""
    queries = list(dict.fromkeys(q for label in labels for q in (label.earlier, label.later)))
    session = f"calibrate-{uuid.uuid4().hex[:8]}"
    t = rt.settings.kb_thresholds(rt.embedder.name, rt.catalog.require(kb))
    found: dict[str, list[str]] = {}
    chosen: dict[str, list[Hit]] = {}
    for q in queries:
        result = rt.lookup_service.lookup(q, session, kb, rules=False, dry_run=True)
        found[q] = [d.doc_key for d in result.documents] if result.relevance_level else []
        chosen[q] = ranked(result.details, result.relevance_level, t.supplement, 1 + rt.settings.max_supplement)
    vectors = dict(zip(queries, rt.embedder.embed_documents([" ".join(q.split()) for q in queries])))
    near = rt.settings.repeat_thresholds(rt.embedder.name).miss_overlap_threshold

    def from_session(label: RepeatLabel) -> dict[str, bool]:
        held = {page_key(k) for k in answer_pages(chosen[label.earlier], t)}  # what the session remembers
        out = {}
        if not found[label.later] and float(np.dot(vectors[label.earlier], vectors[label.later])) < near:
            return {str(band): False for band in BANDS}  # "nothing found" on a held page needs a near query
        for band in BANDS:
            keep = as_relevant(chosen[label.later], held, weaker_margin(t, band))
            out[str(band)] = keep is not None and not any(keep)
        return out

    return [
        PairScore(
            kb=kb,
            earlier=label.earlier,
            later=label.later,
            label=label.label,
            similarity=round(float(np.dot(vectors[label.earlier], vectors[label.later])), 4),
            earlier_found=bool(found[label.earlier]),
            same_documents=not found[label.later] or found[label.later][0] in found[label.earlier],
            all_documents_sent=bool(found[label.later]) and set(found[label.later]) <= set(found[label.earlier]),
            from_session=from_session(label),
        )
        for label in labels
    ]


class Hit(BaseModel):
    doc_key: str
    score: float


def ranked(details: dict, level: str | None, supplement: float, n: int) -> list[Hit]:
    """What a lookup would send, best first, before the session's pages are set aside (its graded scores, from
    the details it logs): the best page and those at the supplements' bar; with no level, the best page
    when it reaches that bar (the lookup says the session has it, or nothing)."""
    scores = [Hit(doc_key=k, score=v) for k, v in (details.get("doc_scores") or {}).items()]
    if not scores or (level is None and scores[0].score < supplement):
        return []
    return (scores[:1] + [h for h in scores[1:] if h.score >= supplement])[:n] if level else scores[:1]


def predicted(score: PairScore, threshold: float) -> bool:
    """The rule of executor/retrieval/repeats.py on one pair, at one threshold."""
    if not score.earlier_found:
        return score.similarity >= threshold
    return score.same_documents and score.similarity >= threshold


def sweep(scores: list[PairScore], grid: list[float] = GRID) -> list[Row]:
    positives = sum(s.label == "repeat" for s in scores)
    rows = []
    for t in grid:
        hits = [s for s in scores if predicted(s, t)]
        tp = sum(s.label == "repeat" for s in hits)
        rows.append(
            Row(
                threshold=t,
                precision=round(tp / len(hits), 4) if hits else 1.0,
                recall=round(tp / positives, 4) if positives else 0.0,
                predicted=len(hits),
            )
        )
    return rows


def choose(rows: list[Row]) -> Choice:
    meeting = [r for r in rows if r.precision >= MIN_PRECISION and r.predicted > 0]
    if meeting:
        best = max(meeting, key=lambda r: (r.recall, r.threshold))
        return Choice(threshold=best.threshold, precision=best.precision, recall=best.recall, met_rule=True)
    best = max(rows, key=lambda r: (r.precision, r.threshold))  # nothing meets it: block as little as possible
    return Choice(threshold=best.threshold, precision=best.precision, recall=best.recall, met_rule=False)


def fit(scores: list[PairScore]) -> tuple[Choice, Choice]:
    """(overlap, miss-overlap) thresholds picked on these pairs."""
    return (
        choose(sweep([s for s in scores if s.earlier_found])),
        choose(sweep([s for s in scores if not s.earlier_found])),
    )


def folds(scores: list[PairScore], k: int = FOLDS) -> list[list[int]]:
    """Pair indexes in k groups; pairs that share an earlier query stay in one group."""
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(scores):
        groups.setdefault(s.earlier, []).append(i)
    out: list[list[int]] = [[] for _ in range(k)]
    for n, members in enumerate(sorted(groups.values(), key=lambda m: (-len(m), scores[m[0]].earlier))):
        out[n % k] += members
    return [f for f in out if f]


def held_out(scores: list[PairScore], k: int = FOLDS) -> HeldOut:
    blocked_by: dict[int, bool] = {}
    thresholds = []
    for fold in folds(scores, k):
        inside = set(fold)
        overlap, miss = fit([s for i, s in enumerate(scores) if i not in inside])
        thresholds.append({"overlap": overlap.threshold, "miss_overlap": miss.threshold})
        for i in fold:
            s = scores[i]
            blocked_by[i] = predicted(s, overlap.threshold if s.earlier_found else miss.threshold)
    rule = _counts(scores, blocked_by)
    combined = _counts(scores, {i: b or scores[i].all_documents_sent for i, b in blocked_by.items()})

    def with_pages(band: float) -> dict:
        c = _counts(
            scores,
            {
                i: b or scores[i].all_documents_sent or scores[i].answered_from_session(band)
                for i, b in blocked_by.items()
            },
        )
        return {"bands": band, **c}

    return HeldOut(
        **rule,
        fold_thresholds=thresholds,
        with_session_pages=with_pages(WEAKER_BANDS),
        by_band=[with_pages(b) for b in BANDS],
        false_blocks=[
            {"earlier": scores[i].earlier, "later": scores[i].later, "similarity": scores[i].similarity}
            for i, b in sorted(blocked_by.items())
            if b and scores[i].label == "distinct"
        ],
        with_doc_retrieved={k: combined[k] for k in ("precision", "recall", "false_positives")},
    )


def _counts(scores: list[PairScore], blocked: dict[int, bool]) -> dict:
    tp = sum(b and scores[i].label == "repeat" for i, b in blocked.items())
    fp = sum(b and scores[i].label == "distinct" for i, b in blocked.items())
    fn = sum(not b and scores[i].label == "repeat" for i, b in blocked.items())
    return {
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 0.0,
        "true_positives": tp,
        "false_positives": fp,
        "false_negatives": fn,
    }


def calibrate_repeats(rt: RepeatStores, sets: list[tuple[str, list[RepeatLabel]]]) -> RepeatCalibration:
    """`sets`: (knowledge base, its labelled pairs); every pair is scored on its own KB."""
    for kb, _ in sets:
        rt.catalog.require(kb)
    scores = [s for kb, labels in sets for s in score_pairs(rt, kb, labels)]
    kb = ",".join(dict.fromkeys(kb for kb, _ in sets))
    overlap, miss = fit(scores)
    current = rt.settings.repeat_thresholds(rt.embedder.name)
    return RepeatCalibration(
        embedder=rt.embedder.name,
        kb=kb,
        pairs=len(scores),
        repeats=sum(s.label == "repeat" for s in scores),
        rows_found=sweep([s for s in scores if s.earlier_found]),
        rows_miss=sweep([s for s in scores if not s.earlier_found]),
        overlap=overlap,
        miss_overlap=miss,
        held_out=held_out(scores),
        current={
            "overlap_threshold": current.overlap_threshold,
            "miss_overlap_threshold": current.miss_overlap_threshold,
        },
        scores=scores,
    )


def write_repeat_thresholds(config_path: Path, embedder: str, overlap: float, miss_overlap: float) -> None:
    """Store the repeat thresholds of one embedder in config.yaml, keeping everything else in the file."""
    update_config(
        config_path,
        ("retrieval", "repeats", "embedders", embedder),
        {"overlap-threshold": overlap, "miss-overlap-threshold": miss_overlap},
    )
