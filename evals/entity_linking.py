"""Entity linking on the sample KB's graph: precision and recall of query -> graph entity alignment.

    python -m evals.entity_linking [--labels evals/labels/entity_linking.yaml] [--json]

The graph's entities come from the sample documents through the same build as
ingest (no store needed). Three methods, each adding to the one before:
exact (the dictionary match graph expansion used so far), prefix + fuzzy,
and embedding. The fuzzy cutoff and the embedding threshold are chosen on the
even-numbered labels (highest F1, ties to the higher threshold) and reported
on the odd-numbered ones, so the reported numbers are not tuned on themselves.
Precision and recall are micro-averaged over (query, entity) pairs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml
from pydantic import BaseModel, Field

from executor.core.settings import SAMPLE_KB_PATH
from executor.retrieval.alignment import Alignment, EntityAligner
from executor.retrieval.extraction import EntityExtractor
from executor.retrieval.graph_build import build_graph_data
from executor.retrieval.ingest import SAMPLE_EXTRACT_CONFIG
from executor.retrieval.sources import load_documents
from executor.stores.knowledge_graph import entity_key

LABELS = Path(__file__).parent / "labels" / "entity_linking.yaml"
FUZZY_GRID = [round(0.70 + i * 0.02, 2) for i in range(16)]  # 0.70 .. 1.00
EMBEDDING_GRID = [round(0.30 + i * 0.02, 2) for i in range(31)]  # 0.30 .. 0.90
OFF = 2.0  # a threshold no score reaches


class LinkLabel(BaseModel):
    query: str = Field(min_length=1)
    entities: list[str] = Field(default_factory=list)


def sample_entity_names() -> dict[str, tuple[str, str | None]]:
    """key -> (name, type) for the sample KB's graph, aliases included, as GraphStore.entity_names gives it."""
    data, _ = build_graph_data(load_documents(SAMPLE_KB_PATH).documents, SAMPLE_EXTRACT_CONFIG)
    names = {k: (e["name"], e["type"]) for k, e in data.entities.items()}
    for e in data.entities.values():
        for alias in e["aliases"]:
            names.setdefault(entity_key(alias), (e["name"], e["type"]))
    return names


def exact_names(extractor: EntityExtractor, names: dict, text: str) -> set[str]:
    return {m.name for m in extractor.extract(text) if entity_key(m.name) in names}


def predict(exact: set[str], candidates: list[Alignment], fuzzy: float, embedding: float) -> set[str]:
    cut = {"exact": 0.0, "prefix": 0.0, "fuzzy": fuzzy, "embedding": embedding}
    return exact | {a.name for a in candidates if a.score >= cut[a.how]}


def scores(gold: list[set[str]], predicted: list[set[str]]) -> dict:
    tp = sum(len(g & p) for g, p in zip(gold, predicted))
    n_pred, n_gold = sum(map(len, predicted)), sum(map(len, gold))
    precision = tp / n_pred if n_pred else 1.0
    recall = tp / n_gold if n_gold else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
        "true_positives": tp,
        "predicted": n_pred,
        "gold": n_gold,
    }


def best_threshold(grid: list[float], f1_at) -> float:
    """The threshold with the highest F1; ties go to the higher threshold."""
    return max(grid, key=lambda t: (f1_at(t), t))


def evaluate(labels: list[LinkLabel], embed) -> dict:
    names = sample_entity_names()
    extractor = EntityExtractor(names)
    aligner = EntityAligner(names, embed)
    exact = [exact_names(extractor, names, label.query) for label in labels]
    candidates = [aligner.candidates(label.query) for label in labels]
    gold = [set(label.entities) for label in labels]
    unknown = sorted({n for g in gold for n in g} - {n for n, _ in names.values()})
    if unknown:
        raise SystemExit(f"labels name entities the graph does not have: {', '.join(unknown)}")
    calib, test = list(range(0, len(labels), 2)), list(range(1, len(labels), 2))

    def f1_on(rows, fuzzy, embedding) -> float:
        return scores([gold[i] for i in rows], [predict(exact[i], candidates[i], fuzzy, embedding) for i in rows])["f1"]

    fuzzy = best_threshold(FUZZY_GRID, lambda t: f1_on(calib, t, OFF))
    embedding = best_threshold(EMBEDDING_GRID, lambda t: f1_on(calib, fuzzy, t))
    methods = {
        "exact": (OFF, OFF, False),
        "exact + prefix + fuzzy": (fuzzy, OFF, True),
        "exact + prefix + fuzzy + embedding": (fuzzy, embedding, True),
    }
    report = {
        "labels": len(labels),
        "calibration_labels": len(calib),
        "test_labels": len(test),
        "entities_in_graph": len({n for n, _ in names.values()}),
        "fuzzy_cutoff": fuzzy,
        "embedding_threshold": embedding,
        "methods": {},
    }
    for method, (fz, emb, aligned) in methods.items():

        def run(rows, fz=fz, emb=emb, aligned=aligned):
            return [exact[i] | (predict(set(), candidates[i], fz, emb) if aligned else set()) for i in rows]

        report["methods"][method] = {
            "calibration": scores([gold[i] for i in calib], run(calib)),
            "test": scores([gold[i] for i in test], run(test)),
        }
    full = [predict(exact[i], candidates[i], fuzzy, embedding) for i in range(len(labels))]
    report["test_errors"] = [
        {"query": labels[i].query, "missed": sorted(gold[i] - full[i]), "wrong": sorted(full[i] - gold[i])}
        for i in test
        if gold[i] != full[i]
    ]
    return report


def load_link_labels(path: Path) -> list[LinkLabel]:
    return [LinkLabel.model_validate(item) for item in yaml.safe_load(path.read_text(encoding="utf-8"))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from executor.stores.embedders import UseEmbedder

    report = evaluate(load_link_labels(args.labels), UseEmbedder().embed_documents)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2))
        return
    print(
        f"{report['labels']} labelled queries ({report['calibration_labels']} calibration, "
        f"{report['test_labels']} test), {report['entities_in_graph']} graph entities; chosen on calibration: "
        f"fuzzy cutoff {report['fuzzy_cutoff']}, embedding threshold {report['embedding_threshold']}"
    )
    print("| method | test precision | test recall | test F1 | calibration F1 |")
    print("|---|---:|---:|---:|---:|")
    for method, r in report["methods"].items():
        t = r["test"]
        print(f"| {method} | {t['precision']:.3f} | {t['recall']:.3f} | {t['f1']:.3f} | {r['calibration']['f1']:.3f} |")
    for e in report["test_errors"]:
        print(f"  {e['query']}: missed {e['missed'] or '-'}, wrong {e['wrong'] or '-'}")


if __name__ == "__main__":
    main()
