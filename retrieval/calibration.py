"""Threshold calibration from labelled questions.

For each labelled question the KB is searched (no session, no log: a dry run)
and every document found gets its similarity. At a threshold t a document is
predicted relevant when its similarity is at least t; precision and recall are
counted over all (question, document) pairs, relevant documents that were not
found counting as misses.

The rule (printed with the table):
- HIGHLY_RELEVANT: the threshold with the highest recall whose precision is at
  least 0.9; on a tie in recall, the higher threshold.
- REFERENCE: the same with precision at least 0.5, and never above the
  HIGHLY_RELEVANT threshold.
If no threshold reaches the precision, the one with the best precision is taken
and the report says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from pydantic import BaseModel, Field, ValidationError

from agent.errors import InputError
from retrieval.relevance import similarity

if TYPE_CHECKING:
    from agent.runtime import Runtime

HR_MIN_PRECISION = 0.9
REF_MIN_PRECISION = 0.4
GRID = [round(0.10 + i * 0.01, 2) for i in range(81)]  # 0.10 .. 0.90
RULE = (f"HIGHLY_RELEVANT: highest recall with precision >= {HR_MIN_PRECISION}; "
        f"REFERENCE: highest recall with precision >= {REF_MIN_PRECISION}, not above HIGHLY_RELEVANT; "
        "ties go to the higher threshold")


class Label(BaseModel):
    query: str = Field(min_length=1)
    relevant: list[str] = Field(default_factory=list)


class Row(BaseModel):
    threshold: float
    precision: float
    recall: float
    predicted: int
    true_positives: int


class Choice(BaseModel):
    threshold: float
    precision: float
    recall: float
    met_rule: bool


class Calibration(BaseModel):
    embedder: str
    labels: int
    relevant_pairs: int
    rule: str = RULE
    rows: list[Row]
    highly_relevant: Choice
    reference: Choice
    current: dict


def load_labels(path: Path) -> list[Label]:
    if not path.exists():
        raise InputError(f"{path}: no such file")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise InputError(f"{path}: not valid YAML{where} ({exc.__class__.__name__})") from exc
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{path}: expected a list of {{query, relevant}} pairs")
    try:
        return [Label.model_validate(item) for item in raw]
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(f"{path}: {'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from exc


def similarities(rt: "Runtime", kb: str, labels: list[Label]) -> list[dict[str, float]]:
    """doc_key -> best chunk similarity, per label, from the same hybrid search lookup uses."""
    rt.catalog.require(kb)
    rt.vectors.check_embedder(kb, rt.embedder)
    max_l2 = rt.settings.thresholds(rt.embedder.name).max_l2_distance
    out = []
    for label in labels:
        vector = rt.embedder.embed_query(label.query)
        sims: dict[str, float] = {}
        for hit in rt.vectors.search(kb, label.query, vector, rt.embedder, rt.settings.top_k):
            sims[hit.doc_key] = max(sims.get(hit.doc_key, 0.0), similarity(hit.distance, max_l2))
        out.append(sims)
    return out


def sweep(labels: list[Label], sims: list[dict[str, float]], grid: list[float] = GRID) -> list[Row]:
    total_relevant = sum(len(set(label.relevant)) for label in labels)
    rows = []
    for t in grid:
        predicted = tp = 0
        for label, found in zip(labels, sims):
            relevant = set(label.relevant)
            for doc, sim in found.items():
                if sim >= t:
                    predicted += 1
                    tp += doc in relevant
        rows.append(Row(threshold=t, precision=round(tp / predicted, 4) if predicted else 1.0,
                        recall=round(tp / total_relevant, 4) if total_relevant else 0.0,
                        predicted=predicted, true_positives=tp))
    return rows


def choose(rows: list[Row], min_precision: float, ceiling: float = 1.0) -> Choice:
    allowed = [r for r in rows if r.threshold <= ceiling]
    meeting = [r for r in allowed if r.precision >= min_precision and r.predicted > 0]
    if meeting:
        best = max(meeting, key=lambda r: (r.recall, r.threshold))
        return Choice(threshold=best.threshold, precision=best.precision, recall=best.recall, met_rule=True)
    best = max(allowed, key=lambda r: (r.precision, r.recall, r.threshold))
    return Choice(threshold=best.threshold, precision=best.precision, recall=best.recall, met_rule=False)


def at(rows: list[Row], threshold: float) -> dict:
    nearest = min(rows, key=lambda r: abs(r.threshold - threshold))
    return {"threshold": threshold, "precision": nearest.precision, "recall": nearest.recall}


def calibrate(rt: "Runtime", kb: str, labels: list[Label]) -> Calibration:
    rows = sweep(labels, similarities(rt, kb, labels))
    hr = choose(rows, HR_MIN_PRECISION)
    ref = choose(rows, REF_MIN_PRECISION, ceiling=hr.threshold)
    current = rt.settings.thresholds(rt.embedder.name)
    return Calibration(
        embedder=rt.embedder.name,
        labels=len(labels),
        relevant_pairs=sum(len(set(label.relevant)) for label in labels),
        rows=rows,
        highly_relevant=hr,
        reference=ref,
        current={"highly_relevant": at(rows, current.highly_relevant_threshold),
                 "reference": at(rows, current.reference_threshold)},
    )


def write_thresholds(config_path: Path, embedder: str, highly_relevant: float, reference: float) -> None:
    """Store the thresholds for one embedder in config.yaml, keeping everything else in the file."""
    data = {}
    if config_path.exists():
        data = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict):
            raise InputError(f"{config_path}: expected a mapping at the top level")
    node = data.setdefault("retrieval", {}).setdefault("normalization", {}).setdefault("embedders", {})
    node.setdefault(embedder, {}).update({"highly-relevant-threshold": highly_relevant, "reference-threshold": reference})
    tmp = config_path.with_suffix(config_path.suffix + ".tmp")
    tmp.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    tmp.replace(config_path)  # all or nothing
