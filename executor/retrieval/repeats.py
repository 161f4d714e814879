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

Rephrasings that share few words with the earlier query (a question restated as the command or flag that
answers it, the feature's English name for a zh question) are far apart for a sentence encoder, so the
queries alone miss most of them. What they share is their answer: the best page for the new lookup, ranked
before the session's pages are set aside, is one the session already holds. Then the lookup is answered
from the session (`answered_from_session`) unless a new page scores about as well on the KB's own scale
(`WEAKER_BANDS`): the leftovers are the next-best pages, usually not about the question, and sending them is
how a rephrasing "finds something" every time. A page and its translation at the same path under another
language folder (`en/x.md`, `zh/x.md`) are one page here (`page_key`). Lookups blocked by any of these
rules are remembered too (level DEDUPED, with the pages they pointed at), so the next rephrasing is compared
with them as well.

Only the pages that answered a lookup count for this (`answer_pages`: its best page, those about as relevant
as it and those graded HIGHLY_RELEVANT on their own score; an earlier lookup's `doc_keys` are these). The
weaker supplements it sent stay in the session and are never sent again, but a later question whose best page
is one of them is a new question: what was sent of that page was cut to the earlier query, and blocking it
would answer the new question with nothing. A lookup naming the missing dimension of an earlier REFERENCE
result that brought its best page is a targeted supplement and runs (`targets_reference`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import numpy as np

from executor.core.relevance import page_key
from executor.core.settings import RepeatThresholds, Thresholds
from executor.prompts.hints import hint
from executor.stores.memory import EarlierLookup

REFERENCE = "REFERENCE"
BLOCKED = "DEDUPED"  # the level a remembered blocked lookup carries

# A new page answers as well as the held best page when it scores within this fraction of the band between
# the KB's REFERENCE and HIGHLY_RELEVANT thresholds below it (`band_position`: each KB on its own scale). Judged
# on evals/labels/repeats*.yaml (`executor calibrate-repeats`, held out, every width in its `BANDS`): the
# session's dedup keeps its precision across widths (0.78 at 0 and 0.05, 0.77 at 0.1 and 0.5) while its recall
# falls (0.65, 0.63, 0.62, 0.52), so the narrowest width that still lets a near tie through. At 0.1 a rephrasing
# sent the next-best pages as new (docs/repeats.md).
WEAKER_BANDS = 0.05


class Ranked(Protocol):
    # read-only: a frozen dataclass's fields are ranked too
    @property
    def doc_key(self) -> str: ...
    @property
    def score(self) -> float: ...


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


def one_per_page(ranked: Sequence[Ranked]) -> list:
    """The best-ranked of each page (`ranked` is best first): a page and its translation say the same thing, so
    one lookup sends one of them."""
    best: dict[str, Ranked] = {}
    for c in ranked:
        best.setdefault(page_key(c.doc_key), c)
    return list(best.values())


def answered_pages(earlier: list[EarlierLookup], batch: str | None, qualified: bool = False) -> set[str]:
    """Pages (page keys) that answered an earlier lookup of the session (its `doc_keys`), leaving out the lookups
    of this same LLM message: lookups proposed together are sub-questions and do not answer each other.
    `qualified`: keys as `kb/doc_key` (a call over several KBs)."""
    return {
        page_key(f"{e.kb}/{k}" if qualified else k)
        for e in earlier
        if batch is None or e.batch != batch
        for k in e.doc_keys
    }


def answer_pages(chosen: Sequence[Ranked], t: Thresholds, bands: float = WEAKER_BANDS) -> list[str]:
    """The doc keys that answer a lookup (`chosen` best first): its best page, the pages about as relevant as it
    (within `weaker_margin`) and every page graded HIGHLY_RELEVANT on its own score; the rest are supplements
    (see the module's docstring)."""
    if not chosen:
        return []
    bar = min(chosen[0].score - weaker_margin(t, bands), t.highly_relevant_threshold)
    return [c.doc_key for c in chosen if c.score >= bar]


def band_position(score: float, t: Thresholds) -> float:
    """A score on its KB's own scale: 0 at REFERENCE, 1 at HIGHLY_RELEVANT, so that pages of KBs graded
    differently (a ranker's probability, a similarity) compare."""
    band = t.highly_relevant_threshold - t.reference_threshold
    return (score - t.reference_threshold) / band if band > 0 else score - t.reference_threshold


def weaker_margin(t: Thresholds, bands: float = WEAKER_BANDS) -> float:
    """How far below the held best page a new page may score (in `t`'s units) and still answer as well."""
    return bands * max(t.highly_relevant_threshold - t.reference_threshold, 0.0)


def as_relevant(chosen: Sequence[Ranked], held: set[str], margin: float) -> list[bool] | None:
    """None when the best of `chosen` (best first, before the session's pages are set aside) is not a page
    that answered the session (`held`: page keys); else, per candidate, whether it is a new page that scores
    within `margin` of that best page (the ones still worth sending; `margin` in the scores' units)."""
    if not chosen or page_key(chosen[0].doc_key) not in held:
        return None
    bar = chosen[0].score - margin
    return [page_key(c.doc_key) not in held and c.score >= bar for c in chosen]


def targets_reference(best_doc: str, earlier: list[EarlierLookup], missing_dimension: str | None) -> bool:
    """The lookup names the `missing_dimension` of an earlier REFERENCE result that brought its best page: a
    targeted supplement, which runs however well that page scores now."""
    page = page_key(best_doc)
    return bool(missing_dimension) and any(
        e.level == REFERENCE and page in {page_key(k) for k in e.doc_keys} for e in earlier
    )


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
            pages = {page_key(k) for k in e.doc_keys}
            if sim < thresholds.overlap_threshold or (best_doc is not None and page_key(best_doc) not in pages):
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


def repeat_hint(repeat: Repeat, lang: str, pages: str = "-") -> str:
    """What the LLM is told: which earlier lookup this repeats, what that lookup found, and (`pages`) the
    session's documents it points back at."""
    level = repeat.earlier.level
    if repeat.reason == DedupReason.NOT_FOUND_REPEATED or level is None:  # no level: the earlier one found nothing
        return hint("not_found_repeated", lang, earlier=repeat.earlier.query)
    key = {REFERENCE: "query_repeated_reference", BLOCKED: "query_repeated_blocked"}.get(level, "query_repeated")
    return hint(key, lang, earlier=repeat.earlier.query, level=level, pages=pages)
