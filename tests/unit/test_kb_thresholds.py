"""A KB's own grading model (`knowledge_base.grading_model`): which thresholds a KB is graded with."""

from types import SimpleNamespace

import pytest

from executor.core.errors import ConfigError
from executor.core.settings import RANKER_PRESETS, KbModel, Ranker, Settings, Thresholds

EMBEDDER = "use-multilingual-v3"
OWN = Thresholds(
    max_l2_distance=2.0,
    highly_relevant_threshold=0.6,
    reference_threshold=0.4,
    supplement_threshold=0.1,
    ranker=Ranker(bias=-1.0, weights={"similarity": 2.0}),
)


def _empty_config(tmp_path):
    """An empty config file: none of ./config.yaml, and no error (a config file named but missing is one)."""
    path = tmp_path / "empty-config.yaml"
    path.write_text("")
    return path


def _row(name="docs", grading=None, model=None):
    return SimpleNamespace(name=name, grading=grading, grading_model=model)


def _stored(embedder=EMBEDDER, thresholds=OWN) -> dict:
    return KbModel(embedder=embedder, thresholds=thresholds, labels={"l.yaml": 12}).model_dump(mode="json")


@pytest.fixture
def settings(monkeypatch, tmp_path):
    monkeypatch.setenv("EXECUTOR_CONFIG", str(_empty_config(tmp_path)))
    monkeypatch.delenv("EXECUTOR_GRADING", raising=False)
    return Settings(home=tmp_path)


def test_a_kb_with_its_own_model_is_graded_by_it_and_the_others_by_the_preset(settings):
    assert settings.kb_thresholds(EMBEDDER, _row(model=_stored())) == OWN
    assert settings.kb_thresholds(EMBEDDER, _row("other")) == RANKER_PRESETS[EMBEDDER]


def test_a_model_fitted_for_another_embedder_or_a_kb_graded_by_similarity_is_not_used(settings):
    assert settings.kb_thresholds(EMBEDDER, _row(model=_stored(embedder="bge-m3"))) == RANKER_PRESETS[EMBEDDER]
    assert settings.kb_thresholds(EMBEDDER, _row(grading="similarity", model=_stored())).ranker is None
    forced = Settings(home=settings.home, grading="similarity")  # EXECUTOR_GRADING=similarity: for every KB
    assert forced.kb_thresholds(EMBEDDER, _row(model=_stored())).ranker is None


@pytest.mark.parametrize(
    "raw",
    [
        {"embedder": EMBEDDER},  # no thresholds
        {"embedder": EMBEDDER, "thresholds": {"highly_relevant_threshold": 2.0}},  # out of range
        {"embedder": EMBEDDER, "thresholds": {"highly_relevant_threshold": 0.5}},  # no ranker
        {"embedder": EMBEDDER, "thresholds": OWN.model_dump() | {"ranker": {"bias": 0, "weights": {"colour": 1}}}},
        "not a model",
    ],
)
def test_a_corrupt_stored_model_is_one_clear_line(settings, raw):
    with pytest.raises(ConfigError) as err:
        settings.kb_thresholds(EMBEDDER, _row(model=raw))
    message = str(err.value)
    assert "\n" not in message
    assert "knowledge base 'docs'" in message and "grading model is invalid" in message
    assert "executor calibrate" in message  # says how to mend it


def test_the_supplements_bar_defaults_to_reference_and_follows_a_lowered_reference(settings, monkeypatch):
    assert Thresholds(highly_relevant_threshold=0.6, reference_threshold=0.3).supplement == 0.3
    assert OWN.supplement == 0.1
    with pytest.raises(ValueError, match="supplement-threshold must not exceed"):
        Thresholds(highly_relevant_threshold=0.6, reference_threshold=0.3, supplement_threshold=0.4)
    monkeypatch.setenv("EXECUTOR_REFERENCE_THRESHOLD", "0.05")
    lowered = Settings(home=settings.home).kb_thresholds(EMBEDDER, _row(model=_stored()))
    assert (lowered.reference_threshold, lowered.supplement) == (0.05, 0.05)


def test_documents_after_the_first_are_sent_down_to_the_supplements_bar():
    from executor.retrieval.grading import Graded
    from executor.retrieval.ranking import Candidate
    from executor.retrieval.vocabulary import QueryTerms

    def graded(t: Thresholds) -> list[str]:
        cands = [Candidate(k, k, "d", score=s) for k, s in (("a", 0.5), ("b", 0.2), ("c", 0.05))]
        g = Graded(candidates=cands, query_terms=QueryTerms({}, 1.0, []))
        g.level = "REFERENCE"
        return [c.doc_key for c in g.relevant(t)]

    assert graded(Thresholds(highly_relevant_threshold=0.6, reference_threshold=0.3)) == ["a"]
    assert graded(Thresholds(highly_relevant_threshold=0.6, reference_threshold=0.3, supplement_threshold=0.1)) == [
        "a",
        "b",
    ]


def test_a_config_model_brings_its_own_answerability_model_or_none(monkeypatch, tmp_path):
    """A ranker written to config.yaml by `calibrate --shared --write` replaces the preset's answerability model
    with its own, or with none: a gate placed on one ranker's scores means nothing on another's."""
    from executor.core.settings import Answerability, update_config

    gate = Answerability(bias=-1.0, weights={"best_score": 3.0}, threshold=0.4)
    config = tmp_path / "config.yaml"
    monkeypatch.setenv("EXECUTOR_CONFIG", str(config))
    monkeypatch.delenv("EXECUTOR_GRADING", raising=False)
    node = ("retrieval", "normalization", "embedders", EMBEDDER)
    update_config(config, node, {"ranker": OWN.ranker.model_dump(), "answerability": gate.model_dump()})
    assert Settings(home=tmp_path).thresholds(EMBEDDER).answerability == gate
    update_config(config, node, {"answerability": None})
    assert Settings(home=tmp_path).thresholds(EMBEDDER).answerability is None
    with_gate = OWN.model_copy(update={"answerability": gate})
    assert Settings(home=tmp_path).kb_thresholds(EMBEDDER, _row(model=_stored(thresholds=with_gate))) == with_gate


def test_hand_set_thresholds_carry_the_other_language_one_with_them(settings, monkeypatch):
    """EXECUTOR_REFERENCE_THRESHOLD / _HIGHLY_RELEVANT_THRESHOLD set by hand on a KB whose own model has an
    other-language threshold: never an error, and a page in another language never becomes easier to call HR."""
    own = OWN.model_copy(update={"highly_relevant_other_language_threshold": 0.45})
    row = _row(model=_stored(thresholds=own))
    assert settings.kb_thresholds(EMBEDDER, row).highly_relevant(True) == 0.45
    monkeypatch.setenv("EXECUTOR_REFERENCE_THRESHOLD", "0.5")
    raised_ref = Settings(home=settings.home).kb_thresholds(EMBEDDER, row)
    assert raised_ref.reference_threshold == 0.5 and raised_ref.highly_relevant(True) == 0.5
    monkeypatch.delenv("EXECUTOR_REFERENCE_THRESHOLD")
    monkeypatch.setenv("EXECUTOR_HIGHLY_RELEVANT_THRESHOLD", "0.9")
    raised_hr = Settings(home=settings.home).kb_thresholds(EMBEDDER, row)
    assert raised_hr.highly_relevant(False) == 0.9 and raised_hr.highly_relevant(True) == 0.9
