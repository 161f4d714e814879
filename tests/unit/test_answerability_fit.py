"""`calibrate`'s answerability model, fitted on hand-made results: it needs off-topic labels, and its threshold
leaves the off-topic questions it was placed on "nothing found"."""

from executor.core.relevance import answer_features
from executor.core.settings import ANSWER_FEATURES, RANKER_FEATURES, Ranker
from executor.retrieval.calibration import Label, Observed, fit_answerability
from executor.retrieval.grading import Graded
from executor.retrieval.ranking import Candidate
from executor.retrieval.vocabulary import QueryTerms

RANKER = Ranker(bias=-2.0, weights={"similarity": 4.0})


def _observed(i: int, similarity: float, kb_coverage: float, unknown: float, relevant: bool) -> Observed:
    c = Candidate(
        f"d{i}.md",
        f"D{i}",
        "x",
        similarity=similarity,
        features={"similarity": similarity, "kb_coverage": kb_coverage, "unknown_names": unknown},
    )
    label = Label(query=f"question {i}", relevant=[c.doc_key] if relevant else [])
    return Observed(label, "kb", Graded(candidates=[c], query_terms=QueryTerms({}, kb_coverage, [])))


def _questions(off_topic: bool = True) -> list[Observed]:
    answerable = [_observed(i, 0.35 + 0.02 * (i % 10), 0.7 + 0.03 * (i % 10), 0.0, True) for i in range(30)]
    off = [_observed(100 + i, 0.25 + 0.02 * (i % 8), 0.3 + 0.05 * (i % 6), float(i % 3), False) for i in range(12)]
    return answerable + (off if off_topic else [])


def test_the_threshold_leaves_every_off_topic_question_it_was_placed_on_with_nothing():
    observed = _questions()
    gate = fit_answerability(observed, observed, RANKER)
    assert gate is not None and set(gate.weights) == set(ANSWER_FEATURES)
    off = [o for o in observed if not o.label.relevant]
    answerable = [o for o in observed if o.label.relevant]
    assert all(gate.probability(answer_features(o.graded.candidates)) < gate.threshold for o in off)
    passed = [gate.probability(answer_features(o.graded.candidates)) >= gate.threshold for o in answerable]
    assert sum(passed) >= 0.9 * len(passed)  # separable by construction: nearly all answerable ones get through


def test_without_off_topic_labels_there_is_no_answerability_model():
    observed = _questions(off_topic=False)
    assert fit_answerability(observed, observed, RANKER) is None
    # off-topic labels on another KB only: nothing to place this KB's threshold on
    assert fit_answerability(_questions(), observed, RANKER) is None


def test_highly_relevant_is_chosen_apart_for_pages_in_another_language():
    """Same-language best pages are right at every score; the other-language ones are wrong below 0.9: their
    threshold rises to where they are right, the same-language one stays low."""
    from executor.retrieval.calibration import choose_thresholds

    observed = []
    for i in range(40):
        s = 0.30 + 0.015 * i
        o = _observed(i, s, 0.9, 0.0, True)
        c = o.graded.candidates[0]
        c.features["other_language"] = float(i % 2)
        if i % 2 and s < 0.75:  # a wrong page across languages: its label names another document
            o.label.relevant = ["elsewhere.md"]
        observed.append(o)
    ranker = Ranker(bias=0.0, weights={"similarity": 1.0})  # probability rises with the similarity
    hr, hr_other, ref, supplement = choose_thresholds(observed, ranker, 2.0)
    assert hr_other is not None and hr_other > hr
    assert ranker.probability({"similarity": 0.75}) <= hr_other + 0.01
    assert (
        choose_thresholds([o for o in observed if not o.graded.candidates[0].features["other_language"]], ranker, 2.0)[
            1
        ]
        is None
    )  # no page across languages: one threshold


def test_questions_that_only_say_whether_the_kb_answers_train_the_gate_alone():
    """Self-calibration's questions on products a KB only mentions (`gate_only`) score high on the page they name:
    they teach the answerability model what `passing_names` means, but no ranker pair, REFERENCE, HIGHLY_RELEVANT
    or gate threshold is placed on them."""
    from dataclasses import replace

    from executor.retrieval.calibration import choose_thresholds, fit_ranker

    observed = _questions()
    near = []
    for i in range(12):
        o = _observed(200 + i, 0.55, 0.9, 0.0, False)
        o.graded.candidates[0].features["passing_names"] = 1.0
        near.append(replace(o, gate_only=True))
    gate = fit_answerability(observed + near, observed + near, RANKER)
    assert gate is not None and gate.weights["passing_names"] < 0
    assert all(gate.probability(answer_features(o.graded.candidates)) < gate.threshold for o in near)
    assert choose_thresholds(observed + near, RANKER, 2.0) == choose_thresholds(observed, RANKER, 2.0)
    for o in observed + near:
        c = o.graded.candidates[0]
        c.features = {**dict.fromkeys(RANKER_FEATURES, 0.0), **c.features}
    assert fit_ranker(observed + near) == fit_ranker(observed)


def test_the_scaled_penalty_weighs_a_feature_by_its_spread_not_its_units():
    """The same evidence in other units (a similarity spread over 0.04 instead of 4) gets the same model: the
    penalty is on each weight times its feature's spread. Unscaled, the narrow feature was held near zero."""
    from executor.retrieval.calibration import _logistic

    narrow = [0.40 + 0.001 * (i % 20) for i in range(40)] + [0.37 + 0.001 * (i % 20) for i in range(40)]
    y = [True] * 40 + [False] * 40
    wide = [[100 * v] for v in narrow]
    scaled = _logistic([[v] for v in narrow], y, ("f",), scaled=True)
    same = _logistic(wide, y, ("f",), scaled=True)
    assert abs(scaled["weights"]["f"] - 100 * same["weights"]["f"]) < 0.01 * abs(scaled["weights"]["f"])
    assert abs(scaled["bias"] - same["bias"]) < 0.01 * abs(scaled["bias"])
    unscaled = _logistic([[v] for v in narrow], y, ("f",))
    assert abs(unscaled["weights"]["f"]) < 0.1 * abs(scaled["weights"]["f"])
