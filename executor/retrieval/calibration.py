"""Fit the grading model and its thresholds from labelled questions, and say how well they hold.

Every labelled question is graded once (a dry run: no session, no log) and
each candidate document keeps its features (`retrieval.ranking`). Then:

1. a logistic regression over the features, fitted on (question, document,
   relevant?) pairs, gives each document a probability of answering;
2. HIGHLY_RELEVANT is the lowest probability at which the best document of a
   question is relevant for at least 92% of the questions graded there (the target is 90%
   on questions the fit never saw), and above every off-topic question's best document;
   chosen apart for questions whose best document is in another language (the ranker sees
   no shared word there and is surer than it should be);
   REFERENCE the lowest at which at most 5% of the off-topic questions
   (`relevant: []`) still get a document (without off-topic labels: the lowest
   at which 40% of the documents sent are relevant); never above HIGHLY_RELEVANT;
   the supplements' bar the lowest at which 40% of the documents sent after the
   first (2nd to 4th, on questions that got a level) are relevant; never above REFERENCE;
3. with off-topic labels, a second logistic regression over facts about the
   whole result (`core.relevance.answer_features`: the best score, the best
   similarity, how much of the query the KB's vocabulary knows, unknown names),
   fitted on answerable against off-topic questions, decides "nothing found":
   its threshold is the lowest probability at which at most 5% of the off-topic
   questions still get a document; REFERENCE then only separates the levels;
4. the same procedure is run k times, each time fitted on k-1 folds of the
   questions and measured on the fold left out, so the reported figures come
   from questions the model never saw.

Several label files (each on its own KB) are pooled: a model fitted on two
unrelated corpora transfers better to a third than one fitted on either. That
pooled model is the embedder's shared preset. A KB's own model (`target`) is
fitted on the labels given (only its own, or pooled with others) with its
thresholds chosen on its own questions alone, since each KB's scores sit at
their own height; its figures are measured on its own questions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field
from tqdm import tqdm

from executor.core.errors import InputError
from executor.core.relevance import answer_features, language_of
from executor.core.settings import ANSWER_FEATURES, Answerability, KbModel, Ranker, Thresholds, update_config
from executor.retrieval.alignment import as_searched, search_text
from executor.retrieval.grading import Graded, Grader
from executor.retrieval.graph_build import has_graph
from executor.retrieval.label_files import load_label_list
from executor.retrieval.quality import DOCUMENTS_SENT, Quality, Question, measure
from executor.retrieval.ranking import FEATURES
from executor.stores.catalog import Catalog, version
from executor.stores.embedders import Embedder

HR_MIN_PRECISION = 0.92  # above the 0.9 target, so the figure holds on questions the fit never saw
OFF_TOPIC_MAX_RATE = 0.05
REF_MIN_PRECISION = 0.4
SUPPLEMENT_MIN_PRECISION = 0.4  # the same bar REFERENCE uses without off-topic labels


@dataclass(frozen=True)
class Bars:
    """The precision and off-topic bars a model's thresholds are chosen at (human labels: the defaults;
    self-calibration: its own, `retrieval.self_calibration`)."""

    hr_min_precision: float = HR_MIN_PRECISION
    off_topic_max_rate: float = OFF_TOPIC_MAX_RATE
    # with it, the answerability model's weak-REFERENCE band starts where this share of off-topic questions
    # still gets a document (None: no band, below the threshold nothing is found)
    weak_max_rate: float | None = None
    # ranker features held at 0 when fitting (weight 0): ones the questions settle by construction, so the fit
    # would learn the question generator rather than the KB (`retrieval.self_calibration.BY_CONSTRUCTION`)
    ranker_without: tuple[str, ...] = ()


BARS = Bars()
GRID = [round(0.02 + i * 0.01, 2) for i in range(97)]  # 0.02 .. 0.98
FOLDS = 5
RULE = (
    f"HIGHLY_RELEVANT: lowest score where the best document is relevant for >= {HR_MIN_PRECISION:.0%} of questions, "
    f"above every off-topic question's best, chosen apart for a best document in the question's language and "
    f"in another; "
    f"REFERENCE: lowest score where <= {OFF_TOPIC_MAX_RATE:.0%} of off-topic questions still get a document "
    f"(no off-topic labels: >= {REF_MIN_PRECISION:.0%} of documents sent are relevant), not above HIGHLY_RELEVANT; "
    f"supplements: lowest score where >= {SUPPLEMENT_MIN_PRECISION:.0%} of the 2nd-4th documents sent are relevant, "
    f'not above REFERENCE; with off-topic labels, "nothing found" is the answerability model\'s: below the lowest '
    f"probability where <= {OFF_TOPIC_MAX_RATE:.0%} of off-topic questions still get a document"
)


class Label(BaseModel):
    query: str = Field(min_length=1)
    relevant: list[str] = Field(default_factory=list)


@dataclass
class Observed:
    """One labelled question, graded once; calibration re-grades it under each candidate model."""

    label: Label
    kb: str
    graded: Graded
    # evidence on whether the KB answers at all, not on which page does: it trains the answerability model only
    # (self-calibration's questions on products the KB only mentions name a page's subject on purpose, so as the
    # ranker's negatives they would teach it that a page named is no answer, and their scores would lift
    # REFERENCE and HIGHLY_RELEVANT above every real answer)
    gate_only: bool = False

    @property
    def question(self) -> Question:
        return Question(
            query=self.label.query,
            kb=self.kb,
            lang=language_of(self.label.query),
            relevant=list(dict.fromkeys(self.label.relevant)),
        )


class Calibration(BaseModel):
    embedder: str
    labels: dict[str, int]  # label file -> questions
    rule: str = RULE
    target: str | None = None  # the KB this model is for (None: the embedder's shared preset)
    ranker: Ranker
    highly_relevant_threshold: float
    # for a best document in another language than the question; None: no training question had one
    highly_relevant_other_language_threshold: float | None = None
    reference_threshold: float
    supplement_threshold: float
    answerability: Answerability | None = None  # None: no off-topic labels; REFERENCE decides "nothing found"
    held_out: Quality  # k-fold: every question measured by a model fitted without it
    fitted: Quality  # the final model on every question (fitted on them: for comparison only)
    current: Quality  # each KB's grading in force before this run
    folds: int


def load_labels(path: Path) -> list[Label]:
    return load_label_list(path, Label, "{query, relevant} pairs")


def observe(
    grader: Grader,
    catalog: Catalog,
    embedder: Embedder,
    kb: str,
    labels: list[Label],
    t: Thresholds,
    known_entities=None,
    progress: bool = False,
) -> list[Observed]:
    """Grade every labelled question once, as lookup would, without touching any session or log.
    `known_entities` (the runtime's): the query is graded with the entities it is aligned to, as in lookup;
    without it, as written. `progress`: a bar on stderr (questions done of all, and the time left), as ingest
    shows: 100,000 labelled questions take hours."""
    row = catalog.require(kb)
    grader.vectors.check_embedder(kb, embedder, row.source_path)

    vocabulary = grader.vocabulary(kb, version(row))

    def text(query: str) -> str:
        asked = as_searched(query, vocabulary)
        return search_text(known_entities, kb, has_graph(row.extract_config), asked)[0] if known_entities else asked

    # closed on the way out, so a Ctrl-C's "error: interrupted" starts a line of its own, not the bar's
    with tqdm(labels, desc=f"grading {kb}", unit="question", disable=not progress, leave=False) as shown:
        return [
            Observed(label, kb, grader.grade(kb, version(row), q, embedder.embed_query(q), t))
            for label in shown
            for q in [text(label.query)]
        ]


def regrade(observed: list[Observed], t: Thresholds | Mapping[str, Thresholds]) -> list[Question]:
    """Grade every question under `t`: one model for all, or each KB's own (KB name -> thresholds)."""
    out = []
    for o in observed:
        kb_t = t[o.kb] if isinstance(t, Mapping) else t
        o.graded.regrade(kb_t)
        q = o.question
        q.graded(o.graded, kb_t)
        out.append(q)
    return out


def load_fitter() -> None:
    """Import the optimiser now (~0.3 s), e.g. on a thread while an ingest embeds, before it self-calibrates."""
    import scipy.optimize  # noqa: F401


def _class_weights(target: np.ndarray) -> np.ndarray:
    """Each row's weight when the two classes weigh half each (scikit-learn's class_weight="balanced")."""
    n, positives = len(target), int(target.sum())
    return np.where(target, n / (2 * positives), n / (2 * (n - positives)))


def _logistic(
    x: list[list[float]], y: list[bool], names: tuple[str, ...], balanced: bool = False, scaled: bool = False
) -> dict:
    """A logistic regression's bias and weights (L2, C=1, the bias not penalised; `balanced`: each class weighs
    half), named and rounded as a stored model keeps them. This is scikit-learn's LogisticRegression with its lbfgs
    solver, objective and tolerances, whose import (~1.1 s) was a quarter of self-calibration's time: on the Helm
    docs' self-calibration the two agree to 1e-14. `scaled`: the penalty is on each weight times its feature's spread
    (the fit on features divided by their standard deviation, the weights mapped back), so a feature that varies
    little (a similarity spread over 0.1) is not held near zero where one counting names (0 to 2) is free."""
    from scipy.optimize import minimize  # only calibration needs it

    features, target = np.asarray(x, dtype=float), np.asarray(y, dtype=bool)
    spread = np.ones(features.shape[1])
    if scaled and len(features):
        spread = np.where(features.std(axis=0) > 0, features.std(axis=0), 1.0)
        features = features / spread
    weight = _class_weights(target) if balanced else np.ones(len(target))
    sign = np.where(target, 1.0, -1.0)
    total = float(weight.sum())  # scikit-learn averages the loss, and scales the penalty with it

    def loss(p: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = p[:-1], p[-1]
        margin = sign * (features @ w + b)
        dz = -weight * sign / (1.0 + np.exp(margin)) / total
        value = float((weight * np.logaddexp(0.0, -margin)).sum() / total + 0.5 * (w @ w) / total)
        return value, np.append(features.T @ dz + w / total, dz.sum())

    best = minimize(
        loss,
        np.zeros(features.shape[1] + 1),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 1000, "gtol": 1e-4, "ftol": 64 * np.finfo(float).eps, "maxls": 50},
    )
    return {
        "bias": round(float(best.x[-1]), 4),
        "weights": {f: round(float(w), 4) for f, w in zip(names, best.x[:-1] / spread)},
    }


def fit_ranker(observed: list[Observed], without: tuple[str, ...] = ()) -> Ranker:
    x, y = [], []
    for o in (o for o in observed if not o.gate_only):
        relevant = set(o.label.relevant)
        for c in o.graded.candidates:
            x.append([0.0 if f in without else c.features[f] for f in FEATURES])
            y.append(c.doc_key in relevant)
    if len(set(y)) < 2:
        raise InputError("the labels need both relevant and irrelevant documents among the results to fit a model")
    return Ranker(**_logistic(x, y, FEATURES))


def choose_thresholds(
    observed: list[Observed], ranker: Ranker, max_l2: float, bars: Bars = BARS
) -> tuple[float, float | None, float, float]:
    """HIGHLY_RELEVANT (for a best document in the question's language, and in another: None when no training
    question's best was in another language), REFERENCE and the supplements' bar for `ranker`, by RULE."""
    # score the best document of each question once; the thresholds only cut this list
    best: list[tuple[float, bool, bool]] = []  # (score, relevant, off-topic)
    across: set[int] = set()  # indexes into `best` of the answerable questions whose best is in another language
    sent: list[tuple[float, bool]] = []  # every candidate: (score, relevant)
    after: list[tuple[float, float, bool]] = []  # 2nd-4th candidates: (best score of the question, score, relevant)
    probe = Thresholds(max_l2_distance=max_l2, highly_relevant_threshold=1.0, reference_threshold=0.0, ranker=ranker)
    for o in (o for o in observed if not o.gate_only):
        o.graded.regrade(probe)
        relevant = set(o.label.relevant)
        top = o.graded.candidates[0] if o.graded.candidates else None
        if top is not None:
            if relevant and top.features.get("other_language") == 1.0:
                across.add(len(best))
            best.append((top.score, top.doc_key in relevant, not relevant))
            after += [(top.score, c.score, c.doc_key in relevant) for c in o.graded.candidates[1:DOCUMENTS_SENT]]
        sent += [(c.score, c.doc_key in relevant) for c in o.graded.candidates]
    off_best = max((s for s, _, off in best if off), default=-1.0)

    def hr_ok(t: float, other_language: bool) -> bool:
        graded = [rel for i, (s, rel, off) in enumerate(best) if s >= t and not off and (i in across) == other_language]
        return bool(graded) and sum(graded) / len(graded) >= bars.hr_min_precision and t > off_best

    hr = next((t for t in GRID if hr_ok(t, False)), GRID[-1])
    hr_other = next((t for t in GRID if hr_ok(t, True)), GRID[-1]) if across else None
    off_scores = [s for s, _, off in best if off]
    if off_scores:

        def ref_ok(t: float) -> bool:
            return sum(s >= t for s in off_scores) / len(off_scores) <= bars.off_topic_max_rate
    else:

        def ref_ok(t: float) -> bool:
            kept = [rel for s, rel in sent if s >= t]
            return bool(kept) and sum(kept) / len(kept) >= REF_MIN_PRECISION

    ref = min(next((t for t in GRID if ref_ok(t)), hr), hr)

    def supplement_ok(t: float) -> bool:
        kept = [rel for top, s, rel in after if top >= ref and s >= t]
        return bool(kept) and sum(kept) / len(kept) >= SUPPLEMENT_MIN_PRECISION

    supplement = min(next((t for t in GRID if supplement_ok(t)), ref), ref)
    return hr, None if hr_other is None else max(hr_other, ref), ref, supplement


# fitted one at a time after the others, each on every question (`gate_only` ones too), the weights before it held:
# the gate-only questions that teach them name a page's subject on purpose (`fit_answerability`)
OFFSETS = ("passing_names", "unknown_products")


def _offset_weight(fitted: dict, rows: list[tuple[list[float], bool, bool]], feature: str) -> float:
    """The weight of `feature` that fits `rows` best with the weights in `fitted` held (a feature not yet in it
    counts 0), penalised as the scaled `_logistic` penalises every weight (L2, C=1) and with its balanced classes."""
    from scipy.optimize import minimize_scalar  # only calibration needs it

    at = ANSWER_FEATURES.index(feature)
    x = np.asarray([r[0][at] for r in rows])
    if not x.any():
        return 0.0
    z = np.asarray(
        [fitted["bias"] + sum(fitted["weights"].get(f, 0.0) * v for f, v in zip(ANSWER_FEATURES, r[0])) for r in rows]
    )
    sign = np.asarray([1.0 if r[1] else -1.0 for r in rows])
    weight = _class_weights(sign > 0)

    spread = float(x.std()) or 1.0  # penalised in the feature's spread, as the scaled `_logistic` is

    def loss(w: float) -> float:
        return 0.5 * (w * spread) ** 2 + float((weight * np.logaddexp(0.0, -sign * (z + w * x))).sum())

    best = minimize_scalar(loss, bounds=(-20.0, 20.0), method="bounded")
    return round(float(best["x"]), 4)  # an OptimizeResult: a dict whose keys are also attributes


def fit_answerability(
    observed: list[Observed], own: list[Observed], ranker: Ranker, bars: Bars = BARS
) -> Answerability | None:
    """Whether the KB answers at all, fitted on every observed question (answerable against off-topic, the two
    weighted equally: off-topic labels are few); its threshold the lowest probability at which at most
    OFF_TOPIC_MAX_RATE of `own`'s off-topic questions (not `gate_only`: the bar stays on the labels or the pool)
    still get a document. None without off-topic labels in `own` (nothing to place the threshold on) or in
    `observed`."""
    probe = Thresholds(highly_relevant_threshold=1.0, reference_threshold=0.0, ranker=ranker)
    rows: list[tuple[list[float], bool, bool]] = []  # (features, answerable, gate_only)
    for o in observed:
        if o.graded.regrade(probe).candidates:  # a question nothing was found for says nothing here
            features = answer_features(o.graded.candidates)
            rows.append(([features[f] for f in ANSWER_FEATURES], bool(o.label.relevant), o.gate_only))
    own = [o for o in own if not o.gate_only]
    if len({a for _, a, g in rows if not g}) < 2 or not any(not o.label.relevant and o.graded.candidates for o in own):
        return None
    # every feature but the `OFFSETS` on the questions that are not `gate_only`; then each offset alone on all of
    # them, the others held: the gate-only questions name a page's subject on purpose, so their best scores are no
    # user's, and fitted jointly they taught the gate that a high best score means little (on the Helm docs two
    # answerable questions with no passing name fell to "nothing found")
    rest = [f for f in ANSWER_FEATURES if f not in OFFSETS]
    base = [(x, a) for x, a, g in rows if not g]
    fitted = _logistic(
        [[v for f, v in zip(ANSWER_FEATURES, x) if f not in OFFSETS] for x, _ in base],
        [a for _, a in base],
        tuple(rest),
        balanced=True,
        scaled=True,
    )
    for feature in OFFSETS:
        fitted["weights"][feature] = _offset_weight(fitted, rows, feature)
    gate = Answerability(bias=fitted["bias"], weights=fitted["weights"], threshold=0.0)
    off = sorted(
        (
            gate.probability(answer_features(o.graded.candidates))
            for o in own
            if not o.label.relevant and o.graded.candidates
        ),
        reverse=True,
    )

    def above(rate: float, nearest: bool = False) -> float:
        # how many off-topic questions may still get a document: at most the share (the "nothing found" bar); or
        # the share rounded to the nearest count (the weak band, a hedged grade: so that its edge does not jump a
        # whole question down when the pool's size moves by one)
        allowed = min(round(rate * len(off)) if nearest else int(rate * len(off)), len(off) - 1)
        # just above the first off-topic question that must not pass (rounded up, so it stays above when stored)
        return min(math.ceil((off[allowed] + 1e-9) * 10_000) / 10_000, 1.0)

    threshold = above(bars.off_topic_max_rate)
    weak = None if bars.weak_max_rate is None else min(above(bars.weak_max_rate, nearest=True), threshold)
    return gate.model_copy(update={"threshold": threshold, "weak_threshold": weak})


def fit(observed: list[Observed], max_l2: float, target: str | None = None, bars: Bars = BARS) -> Thresholds:
    """The ranker and the answerability model fitted on every observed question; the thresholds on `target`'s
    questions (None: on all)."""
    ranker = fit_ranker(observed, bars.ranker_without)
    own = [o for o in observed if target is None or o.kb == target]
    hr, hr_other, ref, supplement = choose_thresholds(own, ranker, max_l2, bars)
    return Thresholds(
        max_l2_distance=max_l2,
        highly_relevant_threshold=hr,
        reference_threshold=ref,
        supplement_threshold=supplement,
        highly_relevant_other_language_threshold=hr_other,
        ranker=ranker,
        answerability=fit_answerability(observed, own, ranker, bars),
    )


def folds_of(observed: list[Observed], k: int, seed: int = 7) -> list[int]:
    """A fold number per question, shuffled with a fixed seed, each label file spread over every fold."""
    rng = np.random.default_rng(seed)
    fold = [0] * len(observed)
    by_kb: dict[str, list[int]] = {}
    for i, o in enumerate(observed):
        by_kb.setdefault(o.kb, []).append(i)
    for members in by_kb.values():
        for j, i in enumerate(rng.permutation(members)):
            fold[int(i)] = j % k
    return fold


def cross_validate(
    observed: list[Observed],
    max_l2: float,
    k: int = FOLDS,
    target: str | None = None,
    seed: int = 7,
    bars: Bars = BARS,
    progress=None,
) -> list[Question]:
    """Every question graded by a model fitted without its fold (with `target`: that KB's questions only; never a
    `gate_only` one, which is training evidence, not a user's question); `seed` shuffles the folds (another seed:
    how much of a figure is the folds' luck); `progress(1)` after each fold's fit."""
    fold = folds_of(observed, k, seed)
    out: list[Question | None] = [None] * len(observed)
    for f in range(k):
        train = [o for o, g in zip(observed, fold) if g != f]
        t = fit(train, max_l2, target, bars)
        if progress:
            progress(1)
        held = [
            (i, o)
            for i, (o, g) in enumerate(zip(observed, fold))
            if g == f and (target is None or o.kb == target) and not o.gate_only
        ]
        for (i, _), q in zip(held, regrade([o for _, o in held], t)):
            out[i] = q
    return [q for q in out if q is not None]


def calibrate(
    observed: list[Observed],
    sources: dict[str, int],
    current: Mapping[str, Thresholds],
    embedder: str,
    k: int = FOLDS,
    target: str | None = None,
    progress: bool = False,
) -> Calibration:
    """`current`: the thresholds each KB is graded with now (the "before" figures). `target`: fit that KB's own
    model (thresholds and figures on its questions); None: the shared preset over every KB. `progress`: a bar
    on stderr over the k + 1 fits (7 s after grading 2,730 questions, and it grows with them)."""
    own = [o for o in observed if target is None or o.kb == target]
    if target is not None and not own:
        raise InputError(f"no labelled questions are on knowledge base {target!r}: give --labels FILE --kb {target}")
    if len(own) < 2 * k:
        raise InputError(f"{len(own)} labelled questions are too few for {k}-fold calibration")
    max_l2 = next(iter(current.values())).max_l2_distance
    with tqdm(total=k + 1, desc="fitting", unit="fit", disable=not progress, leave=False) as bar:
        held_out = measure(cross_validate(observed, max_l2, k, target, progress=bar.update))
        before = measure(regrade(own, current))
        final = fit(observed, max_l2, target)
        bar.update()
    assert final.ranker is not None  # fit always fits one
    return Calibration(
        embedder=embedder,
        labels=sources,
        target=target,
        ranker=final.ranker,
        highly_relevant_threshold=final.highly_relevant_threshold,
        reference_threshold=final.reference_threshold,
        supplement_threshold=final.supplement,
        answerability=final.answerability,
        held_out=held_out,
        highly_relevant_other_language_threshold=final.highly_relevant_other_language_threshold,
        fitted=measure(regrade(own, final)),
        current=before,
        folds=k,
    )


def kb_model(result: Calibration, max_l2: float, fitted_at: str) -> KbModel:
    """The fitted model as a KB stores it (`knowledge_base.grading_model`)."""
    figures = result.held_out.by_kb[result.target]["all"] if result.target in result.held_out.by_kb else None
    return KbModel(
        embedder=result.embedder,
        labels=result.labels,
        fitted_at=fitted_at,
        thresholds=Thresholds(
            max_l2_distance=max_l2,
            highly_relevant_threshold=result.highly_relevant_threshold,
            reference_threshold=result.reference_threshold,
            supplement_threshold=result.supplement_threshold,
            ranker=result.ranker,
            answerability=result.answerability,
            highly_relevant_other_language_threshold=result.highly_relevant_other_language_threshold,
        ),
        held_out=figures.model_dump() if figures is not None else {},
    )


def write_thresholds(config_path: Path, embedder: str, t: Thresholds) -> None:
    """Store one embedder's model and thresholds in config.yaml, keeping everything else in the file."""
    entry = {
        "highly-relevant-threshold": t.highly_relevant_threshold,
        "reference-threshold": t.reference_threshold,
        "supplement-threshold": t.supplement_threshold,
    }
    if t.ranker is not None:
        entry["ranker"] = t.ranker.model_dump()
        # a stored model replaces the gate with its own (or with none): an old gate is on another ranker's scale
        entry["answerability"] = t.answerability.model_dump() if t.answerability is not None else None
        entry["highly-relevant-other-language-threshold"] = t.highly_relevant_other_language_threshold
    update_config(config_path, ("retrieval", "normalization", "embedders", embedder), entry)
