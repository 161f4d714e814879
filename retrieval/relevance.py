"""Raw distances to similarities, and similarities to the levels the LLM acts on."""

from __future__ import annotations

import re
from enum import StrEnum

from agent.settings import Thresholds


class Level(StrEnum):
    PRECISE = "PRECISE"
    HIGHLY_RELEVANT = "HIGHLY_RELEVANT"
    REFERENCE = "REFERENCE"
    DEDUPED = "DEDUPED"


class DedupReason(StrEnum):
    DOC_RETRIEVED = "doc_retrieved"
    DOMAIN_RETRIEVED = "domain_retrieved"


CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def similarity(squared_l2: float, max_l2_distance: float) -> float:
    """`1 - min(d, max)/max` on Milvus's squared L2; for unit vectors and max 2 this is the cosine."""
    return 1.0 - min(max(squared_l2, 0.0), max_l2_distance) / max_l2_distance


def grade(l0_matches: int, top_similarity: float | None, t: Thresholds) -> Level | None:
    """The decision table of the source design; None means no valid result."""
    if l0_matches == 1:
        return Level.PRECISE
    if top_similarity is not None and top_similarity >= t.highly_relevant_threshold:
        return Level.HIGHLY_RELEVANT
    if l0_matches > 1 or (top_similarity is not None and top_similarity >= t.reference_threshold):
        return Level.REFERENCE
    return None


def domain_block_reason(last_level: str | None, missing_dimension: str | None) -> DedupReason | None:
    """A lookup landing in an already-retrieved domain is a repeat, unless it targets
    a dimension the last (REFERENCE) result lacked."""
    if last_level is None:
        return None
    if last_level == Level.REFERENCE and missing_dimension and missing_dimension.strip():
        return None
    return DedupReason.DOMAIN_RETRIEVED


def language_of(text: str) -> str:
    return "zh" if CJK.search(text or "") else "en"
