"""The repeat rule: is a lookup asking again for something the session already looked up?

A lookup repeats an earlier lookup of the same session (any turn, any process: the earlier lookups
live in the app database) when their queries overlap in meaning:

- the earlier lookup found documents: the query-to-query similarity (same embedder) reaches
  `overlap-threshold` *and* the new lookup's best document is one the earlier lookup returned
  (or the new lookup finds nothing at all);
- the earlier lookup found nothing: the similarity reaches `miss-overlap-threshold` (there are no
  documents to compare). The KB has nothing on it, so a rephrasing is not run again.

Domain is not the rule (a different question in an answered domain runs); it stays in the hints and
in `retrieved_domains_this_session`. Lookups proposed together in one LLM message (`batch`) are
sub-questions and never repeats of each other. After a REFERENCE result, a lookup that names its
`missing_dimension` is a targeted supplement, not a repeat. Documents already sent are still never
sent again (`doc_retrieved`). Both thresholds are per embedder, from `executor calibrate-repeats`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from core.settings import RepeatThresholds
from prompts.hints import hint
from stores.memory import EarlierLookup

REFERENCE = "REFERENCE"


class DedupReason(StrEnum):
    DOC_RETRIEVED = "doc_retrieved"  # every document found was already sent in the session
    QUERY_REPEATED = "query_repeated"  # overlaps an earlier lookup that found documents
    NOT_FOUND_REPEATED = "not_found_repeated"  # overlaps an earlier lookup that found nothing


# a lookup blocked by one of these sends nothing and runs no answer from new documents
MEANING_REASONS = (DedupReason.QUERY_REPEATED, DedupReason.NOT_FOUND_REPEATED)


@dataclass(frozen=True)
class Repeat:
    reason: DedupReason
    earlier: EarlierLookup
    similarity: float


def similarities(vector: np.ndarray, earlier: list[EarlierLookup], batch: str | None) -> list[float | None]:
    """Cosine of the query with each earlier one (vectors are unit length); None for siblings and for
    vectors of another size (another embedder)."""
    out: list[float | None] = []
    for e in earlier:
        sibling = batch is not None and e.batch == batch
        out.append(None if sibling or e.vector.shape != vector.shape else float(np.dot(vector, e.vector)))
    return out


def find_repeat(
    vector: np.ndarray,
    best_doc: str | None,
    earlier: list[EarlierLookup],
    thresholds: RepeatThresholds,
    batch: str | None = None,
    missing_dimension: str | None = None,
) -> Repeat | None:
    """The earlier lookup this one repeats (the most similar one), or None."""
    found: Repeat | None = None
    for e, sim in zip(earlier, similarities(vector, earlier, batch)):
        if sim is None:
            continue
        if e.level is None:
            if sim < thresholds.miss_overlap_threshold:
                continue
            reason = DedupReason.NOT_FOUND_REPEATED
        else:
            if sim < thresholds.overlap_threshold or (best_doc is not None and best_doc not in e.doc_keys):
                continue  # a lookup that finds nothing brings nothing new: the queries alone decide
            if e.level == REFERENCE and missing_dimension:
                continue  # a targeted supplement of a REFERENCE result
            reason = DedupReason.QUERY_REPEATED
        if found is None or sim > found.similarity:
            found = Repeat(reason, e, sim)
    return found


def nearest(vector: np.ndarray, earlier: list[EarlierLookup], batch: str | None, k: int = 3) -> list[dict]:
    """The closest earlier queries, for the invocation log (never shown to the LLM)."""
    scored = [(s, e) for e, s in zip(earlier, similarities(vector, earlier, batch)) if s is not None]
    scored.sort(key=lambda p: -p[0])
    return [{"query": e.query, "similarity": round(s, 4), "level": e.level} for s, e in scored[:k]]


def repeat_hint(repeat: Repeat, lang: str) -> str:
    """What the LLM is told: which earlier lookup this repeats and what that lookup found."""
    if repeat.reason == DedupReason.NOT_FOUND_REPEATED:
        return hint("not_found_repeated", lang, earlier=repeat.earlier.query)
    key = "query_repeated_reference" if repeat.earlier.level == REFERENCE else "query_repeated"
    return hint(key, lang, earlier=repeat.earlier.query, level=repeat.earlier.level)
