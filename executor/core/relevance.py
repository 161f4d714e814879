"""Raw distances to similarities, and similarities to the levels the LLM acts on."""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from typing import Protocol

from executor.core.settings import Thresholds


class Scored(Protocol):
    """A graded candidate (`retrieval.ranking.Candidate`): its calibrated score, its dense similarity, its
    features, and whether it matched a specific keyword."""

    score: float
    similarity: float
    features: dict[str, float]
    specific: bool
    decisive: bool

    @property
    def named(self) -> bool: ...  # the query names this page alone (`retrieval.ranking.Candidate.named`)

    @property
    def spelled(self) -> bool: ...  # a keyword lookup whose every term this page uses (`Candidate.spelled`)

    @property
    def group(self) -> str: ...  # the page counted with its translations (`page_key`)


class Level(StrEnum):
    PRECISE = "PRECISE"
    HIGHLY_RELEVANT = "HIGHLY_RELEVANT"
    REFERENCE = "REFERENCE"
    DEDUPED = "DEDUPED"


CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
# a path segment that names a language, as documentation sites file translations (en/, zh/, zh-cn/, ja_JP/)
LANGUAGE_FOLDER = re.compile(r"^(en|zh|cn|ja|ko|de|fr|es|pt|ru|it)([-_][a-z]{2,4})?$", re.IGNORECASE)


def page_key(doc_key: str) -> str:
    """The page a document is, whatever its language: `en/intro/install.md` and `zh/intro/install.md` are one
    (a page and its translations say the same thing: one answer, one page to send, one repeat)."""
    parts = doc_key.split("/")
    return "/".join([p for p in parts[:-1] if not LANGUAGE_FOLDER.match(p)] + parts[-1:])


def folder_language(doc_key: str) -> str | None:
    """The language a document's folder names (`en/intro/install.md`: en; `zh-cn/...`, `cn/...`: zh), None when
    no folder of its path names one."""
    for part in doc_key.split("/")[:-1]:
        match = LANGUAGE_FOLDER.match(part)
        if match:
            code = match.group(1).lower()
            return "zh" if code == "cn" else code
    return None


def similarity(squared_l2: float, max_l2_distance: float) -> float:
    """`1 - min(d, max)/max` on Milvus's squared L2; for unit vectors and max 2 this is the cosine."""
    return 1.0 - min(max(squared_l2, 0.0), max_l2_distance) / max_l2_distance


def grade(candidates: Sequence[Scored], t: Thresholds) -> Level | None:
    """The level of a query's candidates, best first; None means nothing relevant was found.

    PRECISE needs one page (a page and its translations count once) to match specific
    keywords (L0), and agreement: the calibrated score, which weighs every layer, also puts
    it first and at least at REFERENCE. A glossary naming every term is therefore not
    PRECISE unless the vectors and the lexical index agree it is the answer. A decisive
    match needs no agreement: an identifier (error code, config key, flag) that only that
    page uses anywhere in the KB is its answer, and `retrieval.grading` has put it first
    (the dense similarity of a bare code string says little). Otherwise, with an answerability model,
    it decides whether anything is found and the best score whether it is HIGHLY_RELEVANT;
    without one, the best score decides both.
    """
    if not candidates:
        return None
    best = candidates[0].score
    first = candidates[0]
    specific = [c for c in candidates if c.specific]
    # with an answerability model (which weighs them), a question on a product the KB only mentions in passing
    # (`passing_names`) is never a confident answer, even when it names a page's heading ("How do I set the session
    # lifetime in Flask?" on a KB that documents its own sessions and only mentions Flask was PRECISE): agreement on
    # the heading says nothing of the product
    passing = t.answerability is not None and first.features.get("passing_names", 0.0) > 0
    agreed = best >= t.reference_threshold and not passing
    if first.specific and len({c.group for c in specific}) == 1 and (first.decisive or agreed):
        return Level.PRECISE
    # (with a ranker only: a bare similarity at the reference threshold is too weak an agreement)
    named = {c.group for c in candidates if c.named}
    if t.ranker is not None and first.named and len(named) == 1 and agreed:
        return Level.PRECISE
    highly_relevant = t.highly_relevant(candidates[0].features.get("other_language") == 1.0)
    # a keyword lookup the best page spells out is never "nothing found", only a reference at best
    floor = Level.REFERENCE if first.spelled else None
    if t.answerability is not None:
        # the answerability model decides whether anything is found; the best score only how well
        if weak(candidates, t):
            return Level.REFERENCE
        if t.answerability.probability(answer_features(candidates)) < t.answerability.threshold:
            return floor
        return Level.HIGHLY_RELEVANT if best >= highly_relevant and not passing else Level.REFERENCE
    if best >= highly_relevant:
        return Level.HIGHLY_RELEVANT
    if best >= t.reference_threshold:
        return Level.REFERENCE
    return floor


def weak(candidates: Sequence[Scored], t: Thresholds) -> bool:
    """The best page is only a weak answer, sent as REFERENCE with a hint saying the KB may not cover the
    question: the answerability model puts the query in its band between "nothing found" and found
    (`Answerability.weak_threshold`), or below it with a keyword lookup the best page spells out (the floor of
    `grade`: found, but on the words alone; without a model, below the reference threshold)."""
    if not candidates:
        return False
    first, gate = candidates[0], t.answerability
    if gate is None:
        return first.spelled and first.score < t.reference_threshold
    p = gate.probability(answer_features(candidates))
    if p >= gate.threshold:
        return False
    return first.spelled or gate.weak_threshold is not None and p >= gate.weak_threshold


def answer_features(candidates: Sequence[Scored]) -> dict[str, float]:
    """What the answerability model sees of a query's result (candidates best first, not empty):
    - `best_score`: the ranker's probability for the best document;
    - `best_similarity`: the highest dense similarity of any candidate (a query that shares meaning with
      nothing in the KB stays low whatever the ranker says);
    - `kb_coverage`, `unknown_names`: how much of the query's term weight the KB's vocabulary knows, and how
      many name-like words it never uses (the same for every candidate: they describe the query);
    - `passing_names`: how many name-like words it uses only in passing, never in a title, heading, keyword or
      code (`retrieval.vocabulary.passing_names`; 0 for a model's candidates described before it existed);
    - `unknown_products`: how many of the unknown names name another product or file (`unknown_names` counts them
      too; 0 likewise).
    """
    first = candidates[0]
    return {
        "best_score": first.score,
        "best_similarity": max(c.similarity for c in candidates),
        "kb_coverage": first.features.get("kb_coverage", 0.0),
        "unknown_names": first.features.get("unknown_names", 0.0),
        "passing_names": first.features.get("passing_names", 0.0),
        "unknown_products": first.features.get("unknown_products", 0.0),
    }


def language_of(text: str) -> str:
    """A query's language: any Chinese character makes it Chinese (an English name inside is normal)."""
    return "zh" if CJK.search(text or "") else "en"


def document_language(text: str) -> str:
    """A document's language: Chinese when over a tenth of its visible characters are. Translated
    documentation keeps code, commands and names in English, so one CJK character is not enough."""
    return language_by_counts(sum(1 for ch in text if not ch.isspace()), len(CJK.findall(text)))


def language_by_counts(visible: int, cjk: int) -> str:
    """`document_language` from a text's counts of visible and of CJK characters (sums over its parts)."""
    return "zh" if visible and cjk > 0.1 * visible else "en"
