"""One settings object for the whole application.

Sources, highest first: environment variables, `config.yaml` (path in
EXECUTOR_CONFIG, default ./config.yaml), then the defaults below. Relevance
thresholds are per embedder because distances from different models are not
comparable; see `Settings.thresholds`.
"""

from __future__ import annotations

import math
import os
import re
import stat
import sys
from functools import lru_cache
from importlib import resources
from inspect import isclass
from pathlib import Path
from types import UnionType
from typing import Any, ClassVar, Literal, Union, get_args, get_origin
from urllib.parse import urlsplit

import yaml
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from executor.core import bounded_yaml
from executor.core.errors import BackendError, ConfigError, InputError, register_secret, warn
from executor.core.fs import home_folder, private_dir

# the bundled sample KB is package data: the wheel carries it, and an installed `executor ingest` finds it here
SAMPLE_KB_PATH = Path(str(resources.files("executor") / "kb" / "sample"))


# The ranker's features, in the order of its weights (each described in executor/retrieval/ranking.py). They live here,
# at the bottom, because a config file's ranker is checked against them when the settings load.
RANKER_FEATURES = (
    "similarity",
    "lift",
    "gap",
    "lexical",
    "coverage",
    "kb_coverage",
    "unknown_names",
    "specific_keyword",
    "other_language",
    "coverage_same_language",
    "lexical_same_language",
    "similarity_other_language",
    "lift_other_language",
    "coverage_other_language",
)


# The answerability model's features: facts about a query's whole result, not about one document (each
# described in executor/core/relevance.py, `answer_features`).
ANSWER_FEATURES = (
    "best_score",
    "best_similarity",
    "kb_coverage",
    "unknown_names",
    "passing_names",
    "unknown_products",
)


class Logistic(BaseModel):
    """A logistic model over named features, fitted by `executor calibrate`; `FEATURES` names the ones it may use."""

    model_config = ConfigDict(frozen=True)
    FEATURES: ClassVar[tuple[str, ...]] = ()

    bias: float
    weights: dict[str, float]

    @model_validator(mode="after")
    def _known_features(self) -> Logistic:
        unknown = sorted(set(self.weights) - set(self.FEATURES))
        if unknown:
            raise ValueError(f"unknown {type(self).__name__.lower()} features {unknown}; known: {list(self.FEATURES)}")
        return self

    def probability(self, x: dict[str, float]) -> float:
        z = self.bias + sum(self.weights.get(name, 0.0) * value for name, value in x.items())
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


class Ranker(Logistic):
    """The probability that one document answers the query, from the grading features (`RANKER_FEATURES`)."""

    FEATURES: ClassVar[tuple[str, ...]] = RANKER_FEATURES


class Answerability(Logistic):
    """The probability that the KB answers the query at all, from its whole result (`ANSWER_FEATURES`); below
    `threshold` the lookup finds nothing. Which document answers is the ranker's question; whether any does is
    a question about the query (are its names known here, does anything stand out), and one model fitted for
    the first answers the second badly: on the Helm docs, questions whose right page came first were graded
    "nothing found" while off-topic ones scored above them."""

    FEATURES: ClassVar[tuple[str, ...]] = ANSWER_FEATURES

    threshold: float = Field(ge=0, le=1)
    # between this and `threshold` the best page is sent as a weak REFERENCE (its hint says the KB may not cover
    # the question) instead of "nothing found": an answerable question must almost never get "nothing found",
    # and the band costs off-topic questions only a REFERENCE, never a confident grade. None: no band
    weak_threshold: float | None = Field(default=None, ge=0, le=1)


class Thresholds(BaseModel):
    """How raw squared-L2 distances become similarities, and scores become levels.

    With a `ranker`, the two thresholds apply to its calibrated probability that a document
    answers the query; without one (an embedder nobody calibrated), to the bare similarity.
    """

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    max_l2_distance: float = Field(default=2.0, validation_alias="max-l2-distance", gt=0)
    highly_relevant_threshold: float = Field(default=0.75, validation_alias="highly-relevant-threshold", ge=0, le=1)
    reference_threshold: float = Field(default=0.5, validation_alias="reference-threshold", ge=0, le=1)
    # Once a lookup found something (its best document is at REFERENCE), the documents sent after it need only
    # this score; unset, REFERENCE. On a bilingual KB the page's translation and its neighbours answer too and
    # often score below REFERENCE, which guards only whether the KB answers at all (off-topic questions).
    supplement_threshold: float | None = Field(default=None, validation_alias="supplement-threshold", ge=0, le=1)
    # HIGHLY_RELEVANT for a best document in another language than the question; unset, the same as for one in
    # its language. Calibrated apart because the ranker is surer than it should be across languages (Helm, held
    # out: 0.78 precision at the threshold that gives same-language pages 0.92): it sees no shared word there.
    highly_relevant_other_language_threshold: float | None = Field(
        default=None, validation_alias="highly-relevant-other-language-threshold", ge=0, le=1
    )
    ranker: Ranker | None = None
    # with a ranker and off-topic labels, `calibrate` fits this too: it decides "nothing found" (REFERENCE's
    # threshold then only orders the levels); without it, a best score below REFERENCE is "nothing found"
    answerability: Answerability | None = None

    @model_validator(mode="after")
    def _ordered(self) -> Thresholds:
        if self.reference_threshold > self.highly_relevant_threshold:
            raise ValueError("reference-threshold must not exceed highly-relevant-threshold")
        if self.supplement_threshold is not None and self.supplement_threshold > self.reference_threshold:
            raise ValueError("supplement-threshold must not exceed reference-threshold")
        other = self.highly_relevant_other_language_threshold
        if other is not None and other < self.reference_threshold:
            raise ValueError("highly-relevant-other-language-threshold must not be below reference-threshold")
        if self.answerability is not None and self.ranker is None:
            raise ValueError("an answerability model needs the ranker it was fitted with")
        return self

    def highly_relevant(self, other_language: bool) -> float:
        """The HIGHLY_RELEVANT threshold for a best document in the question's language or in another."""
        other = self.highly_relevant_other_language_threshold
        return other if other_language and other is not None else self.highly_relevant_threshold

    @property
    def supplement(self) -> float:
        """The score a document after the first needs to be sent."""
        return self.reference_threshold if self.supplement_threshold is None else self.supplement_threshold


class ThresholdOverride(BaseModel):
    # extra="forbid" on the retrieval settings: a misspelt key (EXECUTOR_RETRIEVAL or config.yaml) would else be
    # dropped, and its threshold silently left at the default
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    # A threshold a user sets (a share, a similarity, a probability; here, flat in Settings, in RepeatOverride) is
    # above 0 and at most 1: a hand-set 0 is never meant (every page HIGHLY_RELEVANT, "nothing found" never said,
    # every name aligned), so it is refused naming the key, like -0.1 or 1.5. The thresholds the code builds itself
    # (calibration's probes, `Thresholds`) may be 0.
    max_l2_distance: float | None = Field(default=None, validation_alias="max-l2-distance", gt=0)
    highly_relevant_threshold: float | None = Field(
        default=None, validation_alias="highly-relevant-threshold", gt=0, le=1
    )
    reference_threshold: float | None = Field(default=None, validation_alias="reference-threshold", gt=0, le=1)
    supplement_threshold: float | None = Field(default=None, validation_alias="supplement-threshold", gt=0, le=1)
    highly_relevant_other_language_threshold: float | None = Field(
        default=None, validation_alias="highly-relevant-other-language-threshold", gt=0, le=1
    )
    ranker: Ranker | None = None
    answerability: Answerability | None = None

    def set_values(self) -> dict[str, float]:
        return {
            k: getattr(self, k) for k in type(self).model_fields if k != "embedders" and getattr(self, k) is not None
        }


# The "similarity" grading: levels from the dense similarity. USE multilingual v3's
# thresholds come from `executor calibrate` on evals/labels/sample.yaml in the first release; USE puts
# related pairs at cosine 0.3-0.7, so the bge-m3 numbers of the source design would grade nearly
# everything "not found". PRECISE needs a specific keyword that the similarity also ranks first.
EMBEDDER_THRESHOLD_DEFAULTS: dict[str, Thresholds] = {
    "use-multilingual-v3": Thresholds(max_l2_distance=2.0, highly_relevant_threshold=0.54, reference_threshold=0.28),
    "bge-m3": Thresholds(max_l2_distance=2.0, highly_relevant_threshold=0.75, reference_threshold=0.5),
}

# The "ranker" grading (the default, DEFAULT_GRADING): a logistic model over the grading features, thresholds on its
# probability. A KB graded by the ranker fits its own model at ingest (`retrieval.self_calibration`: questions
# generated from its documents and the bundled off-topic pool, no human label); this shared preset grades only a
# KB that has none (too few documents to generate questions from, or an ingest from before self-calibration).
# Provenance: `executor calibrate --labels evals/labels/sample.yaml --labels evals/labels/sample-keywords.yaml
# --kb sample --shared` (the bundled sample KB's 133 labelled questions, 16 off-topic; USE multilingual v3).
# No Helm label is in it: the Helm docs' labels only measure it (README, "Retrieval quality on real
# documents"). Its answerability model is left out: fitted on the sample KB's 16 off-topic questions, it let every
# Helm off-topic question through (held out on Helm: off-topic "nothing found" 0.00).
RANKER_PRESETS: dict[str, Thresholds] = {
    "use-multilingual-v3": Thresholds(
        max_l2_distance=2.0,
        highly_relevant_threshold=0.28,
        reference_threshold=0.28,
        supplement_threshold=0.28,
        highly_relevant_other_language_threshold=0.33,
        ranker=Ranker(
            bias=-4.3535,
            weights={
                "similarity": 3.6844,
                "lift": 3.8275,
                "gap": -4.0033,
                "lexical": 0.2725,
                "coverage": 1.1851,
                "kb_coverage": -0.3718,
                "unknown_names": 0.1172,
                "specific_keyword": 2.1714,
                "other_language": 1.5265,
                "coverage_same_language": 1.3248,
                "lexical_same_language": 0.9763,
                "similarity_other_language": 1.962,
                "lift_other_language": 1.4447,
            },
        ),
    ),
}
GRADINGS = ("similarity", "ranker")


class KbModel(BaseModel):
    """One KB's own grading model (`knowledge_base.grading_model`), written by `executor calibrate --write` when
    the labels are that KB's (or `--for KB`). It replaces the embedder's shared preset for that KB only, and only
    for the embedder it was fitted with and while the KB is graded by the ranker."""

    model_config = ConfigDict(frozen=True)

    embedder: str = Field(min_length=1)
    thresholds: Thresholds
    labels: dict[str, int] = Field(default_factory=dict)  # label file -> questions it was fitted on
    fitted_at: str = ""
    held_out: dict[str, float | int | None] = Field(default_factory=dict)  # its k-fold figures on this KB
    # "labels": fitted by `calibrate --write` on a team's labels (only calibrate replaces it); "self": fitted at
    # ingest on questions generated from the KB's own documents and the bundled off-topic pool
    # (`retrieval.self_calibration`), refitted when a re-ingest changes the KB enough
    calibrated_by: Literal["labels", "self"] = "labels"
    # a self-calibrated model's account of the KB since it was fitted: the revision the last ingest left (None: a
    # model stored before it was kept) and the documents those ingests added, changed or removed
    # (`retrieval.self_calibration.needs_refit`)
    revision: int | None = None
    moved: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _has_ranker(self) -> KbModel:
        if self.thresholds.ranker is None:
            raise ValueError("a KB's model needs its ranker weights")
        return self

    @classmethod
    def parse(cls, kb: str, raw: Any) -> KbModel:
        """The stored JSON as a model; anything else is one line naming the KB and how to mend it."""
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "model"
            raise ConfigError(
                f"knowledge base {kb!r}: its stored grading model is invalid ({where}: {err['msg']}); refit it with "
                f"`executor calibrate --labels FILE --kb {kb} --write` or drop it with `executor calibrate --kb {kb} "
                f"--reset`"
            ) from exc


DEFAULT_GRADING = "ranker"


class Normalization(ThresholdOverride):
    embedders: dict[str, ThresholdOverride] = Field(default_factory=dict)


class RepeatThresholds(BaseModel):
    """When a lookup repeats an earlier one of the session (executor/retrieval/repeats.py), per embedder.

    `overlap-threshold`: query-to-query similarity above which a lookup whose best document the earlier
    lookup already returned is a repeat; `miss-overlap-threshold`: the same against an earlier lookup that
    found nothing (there are no documents to compare, so the queries alone decide).
    """

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    overlap_threshold: float = Field(default=0.9, validation_alias="overlap-threshold", ge=0, le=1)
    miss_overlap_threshold: float = Field(default=0.9, validation_alias="miss-overlap-threshold", ge=0, le=1)


class RepeatOverride(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    overlap_threshold: float | None = Field(default=None, validation_alias="overlap-threshold", gt=0, le=1)
    miss_overlap_threshold: float | None = Field(default=None, validation_alias="miss-overlap-threshold", gt=0, le=1)

    def set_values(self) -> dict[str, float]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


# USE multilingual v3: from `executor calibrate-repeats --labels evals/labels/repeats.yaml` (README,
# "Repeats by meaning"); 0.82 until grading put unique identifiers first, which changed best pages; the miss
# threshold 0.47 until keyword lookups a page spells out stopped being misses (0.51 refitted). An embedder
# without calibrated values gets 0.9: only near-identical queries.
REPEAT_THRESHOLD_DEFAULTS: dict[str, RepeatThresholds] = {
    "use-multilingual-v3": RepeatThresholds(overlap_threshold=0.76, miss_overlap_threshold=0.51),
}


class Repeats(BaseModel):
    model_config = ConfigDict(extra="forbid")

    embedders: dict[str, RepeatOverride] = Field(default_factory=dict)


class Retrieval(BaseModel):
    model_config = ConfigDict(extra="forbid")

    normalization: Normalization = Field(default_factory=Normalization)
    repeats: Repeats = Field(default_factory=Repeats)


GRAPH_URL_SCHEMES = {
    "falkordb_url": ("redis", "rediss", "unix"),
    "neo4j_uri": ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc", "http", "https"),
}


def config_path() -> Path:
    # set to nothing it is unset, as every setting is (env_ignore_empty): Path("") was the current folder,
    # refused as ".: is a folder"
    return Path(os.environ.get("EXECUTOR_CONFIG") or "config.yaml")


def config_named() -> bool:
    """Whether EXECUTOR_CONFIG names the config file (set, and not to nothing)."""
    return bool(os.environ.get("EXECUTOR_CONFIG"))


# The settings that say where queries, keys and data go. A ./config.yaml is read from whatever folder a command
# runs in, a cloned repository's included: when it sets one of these, the user is told (names only, never values).
WHERE_SETTINGS = (
    "home",
    "openai_base_url",
    "database_url",
    "checkpoint_url",
    "milvus_uri",
    "neo4j_uri",
    "falkordb_url",
    "embedder_path",
    "local_model",
)
_ANNOUNCED: set[Path] = set()  # once per process: the settings load more than once (tests, the runtime, Studio)


def update_config(path: Path, node: tuple[str, ...], values: dict[str, Any]) -> None:
    """Set `values` under the mapping at `node` of a config.yaml, keeping everything else in the file, its comments
    and key order too; the file is replaced whole or not at all."""
    text, data = _read_config(path, InputError) if path.exists() else ("", {})
    target = data
    for depth, key in enumerate(node):
        target = target.setdefault(key, {})
        if not isinstance(target, dict):
            raise InputError(f"{path}: {'.'.join(node[: depth + 1])} is not a mapping; it cannot hold {node[-1]}")
    _set_values(target, values)
    written = _round_trip(text, node, values)
    # ruamel.yaml reads YAML 1.2 and PyYAML (every reader here) 1.1: a text they read alike is written with its
    # comments, any other as PyYAML writes it (its comments dropped, with a word) rather than one that reads wrong
    if written is None or bounded_yaml.load(written, bounded_yaml.CONFIG) != data:
        if text.strip():
            warn(f"{path}: its comments could not be kept; it is rewritten without them")
        written = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    # the file a symbolic link names is the one rewritten (replacing the link cut it off from a dotfiles folder),
    # and it keeps its mode: a config.yaml holding an API key or a database password, kept 0600 by its owner, was
    # replaced by a file the umask made (0644, readable by every user)
    real = path.resolve()
    mode = stat.S_IMODE(real.stat().st_mode) if real.exists() else 0o600
    tmp = real.with_name(f".{real.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                os.fchmod(handle.fileno(), mode)
                handle.write(written)
            tmp.replace(real)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError as exc:
        # a full disk or a folder this user may not write: "error: OSError: [Errno 28] No space left on device"
        # named neither the file nor that it was left as it was
        raise BackendError(f"cannot write {path}: {exc.strerror or exc}; it is unchanged") from exc


def _set_values(target: dict, values: dict[str, Any]) -> None:
    """`target[key] = value` for each of `values`, under the spelling the file already gives a key (a setting's name,
    `overlap_threshold`, or its alias, `overlap-threshold`, which `--write` writes): a second spelling made the
    file one the settings refuse."""
    for key, value in values.items():
        spellings = {key, key.replace("-", "_"), key.replace("_", "-")}
        target[next((k for k in target if k in spellings), key)] = value


def _round_trip(text: str, node: tuple[str, ...], values: dict[str, Any]) -> str | None:
    """`text` (already read within bounds) with `values` set under `node`, its comments, key order and quoting kept
    (ruamel.yaml's round trip; PyYAML keeps no comment); None where ruamel.yaml cannot read it."""
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.error import YAMLError as RuamelError

    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096  # long lines stay as the user wrote them
    try:
        doc = rt.load(text) if text.strip() else None
        lead = ""
        if doc is None:  # empty, or comments alone: those stay at the top
            lead = "".join(line for line in text.splitlines(True) if line.lstrip().startswith("#"))
            doc = CommentedMap()
        target = doc
        for key in node:
            if key not in target:
                target[key] = CommentedMap()
            target = target[key]
        _set_values(target, values)
        out = io.StringIO()
        rt.dump(doc, out)
    except (RuamelError, TypeError, ValueError):
        return None
    return lead + out.getvalue()


class _YamlSource(PydanticBaseSettingsSource):
    """Reads config.yaml; a missing file means no overrides, a broken one is an error."""

    def get_field_value(self, field, field_name):  # pragma: no cover - required by the ABC
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = config_path()
        if not path.exists():
            if config_named():  # named on purpose: a typo must not silently mean "no config"
                raise ConfigError(f"{path}: no such config file (named by EXECUTOR_CONFIG)")
            return {}
        data = read_config(path, ConfigError)
        fields = self.settings_cls.model_fields
        field_of = {spelling: name for name, info in fields.items() for spelling in _spellings(name, info)}
        unknown = sorted(str(k) for k in data if str(k).lower() not in field_of)
        if unknown:  # a misspelt key would otherwise be ignored, and its setting silently left at its default
            raise ConfigError(f"{path}: {_unknown_keys(unknown)}")
        for key, value in data.items():  # YAML's true/false would pass as 1/0 where a number is asked for
            if isinstance(value, bool) and _numeric(fields[field_of[str(key).lower()]].annotation):
                raise ConfigError(f"{path}: {key} is a number, not {str(value).lower()}")
        # YAML's loader keeps the last of a key given twice, silently; and two spellings of one setting
        # (`milvus_uri` and `MILVUS_URI`) would leave which one wins to the settings library
        twice = bounded_yaml.duplicate_keys(path.read_text(encoding="utf-8"))
        if twice:
            raise ConfigError(f"{path}: {twice[0][:60]!r} is given twice; keep one")
        by_field: dict[str, Any] = {}
        for key, value in data.items():
            name = field_of[str(key).lower()]
            if name in by_field:
                raise ConfigError(f"{path}: {key!r} and another key both set {name}; keep one")
            # the settings match their names case by case, so `TOP_K:` or `HOME:` passed the check above and was
            # then dropped without a word (the home, the database URL left at their defaults): the field's name
            by_field[name] = value
        for name, value in by_field.items():
            twice_nested = _spelt_twice(value, fields[name].annotation, name)
            if twice_nested:
                raise ConfigError(f"{path}: {twice_nested}; keep one")
        if not config_named():
            self._announce(path, set(by_field))
        return by_field

    def _announce(self, path: Path, keys: set[str]) -> None:
        """One line on stderr when the implicit ./config.yaml moves an endpoint or a location."""
        fields = self.settings_cls.model_fields
        sets = []
        for name in WHERE_SETTINGS:
            if keys & _spellings(name, fields[name]):
                sets.append(name)
        where = path.resolve()
        if sets and where not in _ANNOUNCED:
            _ANNOUNCED.add(where)
            sys.stderr.write(f"executor: ./{path} sets {', '.join(sets)} (set EXECUTOR_CONFIG to choose a file)\n")


# what a misspelt setting looks like; a "key" of another shape is a line of some other file
_KEY_SHAPE = re.compile(r"[A-Za-z][A-Za-z0-9_\-]{0,59}")


def _unknown_keys(unknown: list[str]) -> str:
    """The unknown keys of a config file, named where they look like a misspelt setting. EXECUTOR_CONFIG naming
    another file (`/etc/shadow`, a credentials file) read its lines as keys, and the error printed them: password
    hashes, tokens."""
    shown = [repr(k) for k in unknown if _KEY_SHAPE.fullmatch(k)][:5]
    if not shown:
        return f"{len(unknown):,} unknown keys, none of them a setting's name: is it a config.yaml?"
    return f"unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(shown)}" + (
        f" (and {len(unknown) - len(shown):,} more)" if len(unknown) > len(shown) else ""
    )


def _spellings(name: str, info) -> set[str]:
    """The keys of config.yaml that set a field: its name and its aliases, lower-cased."""
    alias = info.validation_alias
    return {name} | ({str(a).lower() for a in alias.choices} if isinstance(alias, AliasChoices) else set())


def _spelt_twice(value: Any, annotation: Any, where: str) -> str | None:
    """Where a nested mapping of config.yaml sets one field under two spellings, its name and its alias
    (`overlap_threshold` and `overlap-threshold`, which `--write` writes): the settings took one of them without a
    word. None when there is no such place."""
    if not isinstance(value, dict):
        return None
    kinds = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    for kind in kinds:
        if get_origin(kind) is dict:
            for key, item in value.items():
                if found := _spelt_twice(item, get_args(kind)[1], f"{where}.{key}"):
                    return found
        elif isclass(kind) and issubclass(kind, BaseModel):
            field_of = {
                spelling: name
                for name, info in kind.model_fields.items()
                for spelling in [
                    name,
                    *_aliases(info),
                    *([info.validation_alias] if isinstance(info.validation_alias, str) else []),
                ]
            }
            given: dict[str, str] = {}
            for key, item in value.items():
                name = field_of.get(str(key))
                if name is None:
                    continue  # an unknown key is the model's own error, which names it
                if name in given:
                    return f"{where}: {given[name]!r} and {str(key)!r} both set {name}"
                given[name] = str(key)
                if found := _spelt_twice(item, kind.model_fields[name].annotation, f"{where}.{key}"):
                    return found
    return None


def _numeric(annotation) -> bool:
    """Whether a field takes a number (an int or float, optional or not) and no true/false."""
    kinds = set(get_args(annotation)) or {annotation}
    return bool(kinds & {int, float}) and bool not in kinds


def read_config(path: Path, error: type[Exception]) -> dict:
    """config.yaml's mapping, read within bounds (executor/core/bounded_yaml.py); anything else is `error`, one line
    naming the file."""
    return _read_config(path, error)[1]


def _read_config(path: Path, error: type[Exception]) -> tuple[str, dict]:
    """config.yaml's text and its mapping (read_config)."""
    try:
        if path.is_dir():
            raise error(f"{path}: is a folder, not a config file (EXECUTOR_CONFIG names the file)")
        try:
            text = bounded_yaml.read_text(path, bounded_yaml.CONFIG)
        except bounded_yaml.YamlBoundError as exc:
            raise error(f"{path}: {exc} (EXECUTOR_CONFIG names the config file)") from exc
        data = bounded_yaml.load(text, bounded_yaml.CONFIG) or {}
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    except bounded_yaml.YamlBoundError as exc:
        raise error(f"{path}: {exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise error(
            f"{path}: not valid YAML{where} ({getattr(exc, 'problem', None) or exc.__class__.__name__})"
        ) from exc
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    if not isinstance(data, dict):
        raise error(f"{path}: expected a mapping at the top level")
    return text, data


class Settings(BaseSettings):
    # allow_inf_nan: EXECUTOR_GRAPH_TIMEOUT_S=1e309 is infinity, which no timeout or threshold means
    # hide_input_in_errors: a wrongly typed setting may hold a password; its error (and a --debug traceback)
    # names the setting, never its value
    # env_ignore_empty: a variable set to "" (`MILVUS_URI= executor ...`, compose's `${VAR:-}`) is unset, for
    # every setting alike; before, an empty URL meant unset, an empty number was an error and an empty home
    # was refused
    model_config = SettingsConfigDict(
        env_prefix="EXECUTOR_",
        extra="ignore",
        populate_by_name=True,
        allow_inf_nan=False,
        hide_input_in_errors=True,
        env_ignore_empty=True,
    )

    home: Path = Path(".executor")
    # a Literal, so an unknown name is refused where the settings load, naming EXECUTOR_EMBEDDER (or config.yaml):
    # the embedder's own check said "unknown embedder 'x'" and named neither, and only once a command embedded
    embedder: Literal["use", "bge-m3", "flag"] = Field(default="use", description="use | bge-m3 | flag")
    embedder_path: Path | None = Field(default=None, description="local model directory for bge-m3 / flag")
    milvus_uri: str | None = Field(default=None, validation_alias=AliasChoices("MILVUS_URI", "EXECUTOR_MILVUS_URI"))
    milvus_token: str | None = Field(
        default=None, validation_alias=AliasChoices("MILVUS_TOKEN", "EXECUTOR_MILVUS_TOKEN")
    )
    milvus_timeout_s: float = Field(default=30.0, gt=0)
    database_url: str | None = None

    # The graph: with backend "sql", tables in the application database (SQLite or Postgres, no graph server);
    # with "cypher" (the default), Neo4j when NEO4J_URI is set, else a FalkorDB at FALKORDB_URL, else the
    # embedded FalkorDB.
    graph_backend: Literal["cypher", "sql"] = Field(
        default="cypher", description="cypher | sql (EXECUTOR_GRAPH_BACKEND)"
    )
    neo4j_uri: str | None = Field(default=None, validation_alias=AliasChoices("NEO4J_URI", "EXECUTOR_NEO4J_URI"))
    neo4j_user: str | None = Field(
        default="neo4j", validation_alias=AliasChoices("NEO4J_USER", "NEO4J_USERNAME", "EXECUTOR_NEO4J_USER")
    )
    neo4j_password: str | None = Field(
        default=None, validation_alias=AliasChoices("NEO4J_PASSWORD", "EXECUTOR_NEO4J_PASSWORD")
    )
    neo4j_database: str | None = Field(
        default=None, validation_alias=AliasChoices("NEO4J_DATABASE", "EXECUTOR_NEO4J_DATABASE")
    )
    falkordb_url: str | None = Field(
        default=None, validation_alias=AliasChoices("FALKORDB_URL", "EXECUTOR_FALKORDB_URL")
    )
    falkordb_bolt_port: int | None = Field(
        default=None, ge=1, le=65535, description="also open FalkorDB's experimental Bolt port"
    )
    falkordb_bolt_all_interfaces: bool = Field(
        default=False,
        description="accept that the Bolt port listens on every interface without a password "
        "(it cannot bind 127.0.0.1)",
    )
    graph_name: str = Field(default="executor", pattern=r"^[A-Za-z][A-Za-z0-9_\-]{0,63}$")
    graph_timeout_s: float = Field(default=10.0, gt=0)
    graph_hops: int = Field(default=2, ge=1, le=4)
    graph_max_paths: int = Field(default=20, ge=1, le=200)
    graph_max_nodes_per_hop: int = Field(default=25, ge=1, le=500)
    graph_hop_decay: float = Field(
        default=0.5, gt=0, le=1, description="graph relevance of a path = score x decay^(hops-1)"
    )
    graph_min_results: int = Field(default=5, ge=0, description="expand when a lookup found fewer documents than this")
    # entity alignment of query terms with graph names (executor/retrieval/alignment.py), from
    # `python -m evals.entity_linking`
    entity_fuzzy_cutoff: float = Field(
        default=0.8, gt=0, le=1, description="rapidfuzz ratio a misspelt name must reach"
    )
    entity_embedding_threshold: float = Field(
        default=0.9, gt=0, le=1, description="cosine a phrase must reach to a name"
    )
    kg_timeout_s: float = Field(
        default=20.0, gt=0, description="query_knowledge_graph: each knowledge base's time limit"
    )

    # The LLM: any OpenAI-compatible endpoint; with neither key nor URL set, the offline planner runs.
    openai_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "EXECUTOR_OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "EXECUTOR_OPENAI_BASE_URL")
    )
    model: str = Field(default="gpt-4o-mini", description="the chat model name (EXECUTOR_MODEL)")
    llm_timeout_s: float = Field(default=60.0, gt=0)
    # A local GGUF served for the length of a command (executor/local_llm/): overrides OPENAI_BASE_URL and
    # EXECUTOR_MODEL.
    local_model: str | None = Field(
        default=None, description="EXECUTOR_LOCAL_MODEL: a .gguf path, or 'bundled' for SmolLM2-135M"
    )
    local_model_threads: int = Field(default=2, ge=1, le=256, description="CPU threads llama.cpp uses")
    local_model_ctx: int = Field(default=4096, ge=512, le=262144, description="the local model's context, in tokens")
    local_model_max_tokens: int = Field(
        default=256, ge=16, le=32768, description="tokens a reply may have unless the request says"
    )
    local_model_timeout_s: float = Field(default=300.0, gt=0, description="per request to the local model")
    lookup_budget: int = Field(default=3, ge=1, le=50, description="lookups a turn may run before it must answer")
    checkpoint_url: str | None = Field(
        default=None, description="postgresql://... for a Postgres checkpointer; default SQLite in home"
    )

    # ingest bounds: a file larger than max_file_mb is not read, a document whose text (after conversion)
    # is larger than max_document_mb is skipped with a warning, and an Office file inflating past
    # max_unzipped_mb is refused as a zip bomb
    max_file_mb: float = Field(default=64.0, gt=0, description="largest file ingest reads, in MB")
    max_document_mb: float = Field(default=4.0, gt=0, description="largest document text after conversion, in MB")
    max_unzipped_mb: float = Field(default=256.0, gt=0, description="largest uncompressed DOCX/PPTX/XLSX, in MB")
    # one conversion (PDF, Office, HTML) runs in a worker process within these, else it is a warning
    convert_timeout_s: float = Field(default=120.0, gt=0, description="longest one file's conversion may take, in s")
    convert_memory_mb: float = Field(
        default=2048.0, ge=256, description="most memory one file's conversion may use, in MB"
    )

    top_k: int = Field(default=10, ge=1, le=100, description="chunks fetched by L1")
    max_supplement: int = Field(default=3, ge=0, le=20, description="documents sent after the primary one")
    max_chars_per_doc: int = Field(default=1200, ge=100)
    max_query_chars: int = Field(default=2000, ge=10)

    grading: Literal["similarity", "ranker"] | None = Field(
        default=None,
        description="force one grading for every KB (similarity: the dense similarity; ranker: the "
        "calibrated model); unset, each KB is graded its own way (`kb show`), new ones by the ranker",
    )
    self_calibrate: bool = Field(
        default=True,
        description="at ingest, a KB graded by the ranker fits its own model on questions generated from its "
        "documents and the bundled off-topic pool (executor/retrieval/self_calibration.py); false: it keeps "
        "the shared preset until `executor calibrate --write`",
    )
    retrieval: Retrieval = Field(default_factory=Retrieval)
    # Flat env overrides beat config.yaml: EXECUTOR_HIGHLY_RELEVANT_THRESHOLD=0.6
    # (bounded here, so that an error names the variable that set it)
    max_l2_distance: float | None = Field(default=None, gt=0)
    highly_relevant_threshold: float | None = Field(default=None, gt=0, le=1)
    reference_threshold: float | None = Field(default=None, gt=0, le=1)
    repeat_overlap_threshold: float | None = Field(default=None, gt=0, le=1)
    repeat_miss_overlap_threshold: float | None = Field(default=None, gt=0, le=1)

    @classmethod
    def settings_customise_sources(
        cls, settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings
    ):
        return (init_settings, env_settings, _YamlSource(settings_cls))

    @field_validator("*", mode="before")
    @classmethod
    def _no_stray_ends(cls, value: Any) -> Any:
        """A value that begins or ends with a blank or a line end: a `.env` or systemd EnvironmentFile saved with
        Windows line ends, a copy-paste. `EXECUTOR_HOME=$'/srv/kb\\r'` made a new, empty home beside the real one,
        and a database URL ending so was "the catalog of this home is lost ... move milvus.db away" (hostile24b
        finding 3). Refused, never trimmed: the error names the setting, never its value (it may be a secret)."""
        text = str(value) if isinstance(value, (str, Path)) else None
        if text and text.strip() and text != text.strip():  # (blanks alone are "empty", each setting's own error)
            end = "a line end" if text[-1:] in "\r\n" or text[:1] in "\r\n" else "a blank"
            raise ValueError(
                f"begins or ends with {end} (a file saved with Windows line ends, a copy-paste?): remove it"
            )
        return value

    @field_validator("home", mode="before")
    @classmethod
    def _home_given(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():  # Path("") is the current folder: never meant
            # (an empty variable is unset, its default; this is `home: ""` in config.yaml, or blanks)
            raise ValueError("is empty: set it to a folder, or leave it out for ./.executor")
        if isinstance(value, (str, Path)):  # a quoted "~/x" (or home: ~/x in config.yaml) is no folder named "~"
            return Path(value).expanduser()
        return value

    @field_validator("model", "local_model")
    @classmethod
    def _model_named(cls, value: str | None, info) -> str | None:
        """`model: ""` in config.yaml was taken (every chat request named no model), and an empty local_model
        served nothing, without a word."""
        if value is not None and not value.strip():
            fix = "name the chat model" if info.field_name == "model" else "name a .gguf file or 'bundled'"
            raise ValueError(f"is empty: {fix}, or leave it out")
        return value

    @field_validator("home")
    @classmethod
    def _home_private(cls, value: Path) -> Path:
        try:
            return home_folder(value)
        except PermissionError as exc:
            raise ValueError(str(exc)) from exc

    @field_validator("neo4j_uri", "falkordb_url", "milvus_uri", "openai_base_url")
    @classmethod
    def _url_parses(cls, value: str | None) -> str | None:
        """A URL the driver would fail on later with a bare ValueError ("Invalid IPv6 URL", a port that is no
        number): refused here, where the error names the variable (never the value: it may hold a password)."""
        if value and "://" in value:
            try:
                parts = urlsplit(value)
                parts.port  # noqa: B018 - parsing the port is the check
            except ValueError as exc:
                raise ValueError(f"not a valid URL ({_url_problem(exc, value)})") from None
            if not parts.hostname and parts.scheme != "unix":  # unix:///path.sock: FalkorDB's socket, no host
                raise ValueError("not a valid URL (no host name)")
        return value

    @field_validator("openai_base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        """An OpenAI-compatible endpoint is reached over HTTP: anything else ("notaurl", a host with no scheme) was a
        bare "Connection error." at the first LLM call, naming neither the variable nor the value."""
        if value and value.partition("://")[0].lower() not in ("http", "https"):
            raise ValueError("not an http(s) URL (e.g. http://127.0.0.1:8080/v1)")
        return value

    @field_validator("falkordb_url", "neo4j_uri")
    @classmethod
    def _url_scheme(cls, value: str | None, info) -> str | None:
        """A scheme the driver takes (redis' and neo4j's own errors come later, as a bare ValueError, or as a
        "graph unavailable" that sounds like a server down)."""
        schemes = GRAPH_URL_SCHEMES[info.field_name]
        if value and value.partition("://")[0].lower() not in schemes:
            raise ValueError(f"not a URL this driver takes: use {', '.join(s + '://' for s in schemes)}")
        return value

    @field_validator("milvus_uri")
    @classmethod
    def _milvus_target(cls, value: str | None) -> str | None:
        """pymilvus takes a URL, or a path ending in .db as a Milvus Lite file; anything else it refuses later,
        quoting the value whole (a password in it included)."""
        if value and "://" not in value and not value.endswith(".db"):
            raise ValueError("neither a Milvus URL (http://host:19530) nor a Milvus Lite file (a path ending in .db)")
        return value

    @field_validator("database_url", "checkpoint_url")
    @classmethod
    def _database_url_parses(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value:
            from sqlalchemy.engine import make_url
            from sqlalchemy.exc import ArgumentError, NoSuchModuleError

            try:
                url = make_url(value)
                dialect = url.get_dialect()  # an unknown dialect ("nope://") is a setting to fix, not a crash
            except NoSuchModuleError:
                kind = value.partition(":")[0]  # the scheme alone: what follows may hold a password
                raise ValueError(f"unknown database kind {kind!r} (sqlite, postgresql, mysql)") from None
            except (ArgumentError, ValueError) as exc:
                problem = "not a database URL (such as sqlite:///PATH or postgresql+psycopg://HOST:5432/DB)"
                if not isinstance(exc, ArgumentError):
                    problem += f": {_url_problem(exc, value)}"
                raise ValueError(problem) from None
            if info.field_name == "database_url":  # a checkpoint URL is PostgreSQL's or nothing, said where it opens
                _driver_installed(url, dialect)
            if url.get_backend_name() == "sqlite" and (url.database or ":memory:") == ":memory:":
                # the catalog and the sessions would be gone when the command ends, while its vectors stay in the
                # home: an ingest that "succeeded" left a KB no later command knows
                raise ValueError("an in-memory SQLite database forgets everything when the command ends; name a file")
        return value

    @model_validator(mode="after")
    def _sql_graph_has_its_database(self) -> Settings:
        """The SQL graph runs on SQLite and PostgreSQL: on MySQL/MariaDB an ingest stored the documents, then said to
        run it again "once the graph backend answers", which it never would (hostile24c finding 10). Refused before
        any command stores anything."""
        if self.graph_backend == "sql" and self.database_url:
            from sqlalchemy.engine import make_url

            if make_url(self.database_url).get_backend_name() not in ("sqlite", "postgresql"):
                raise ValueError(
                    f"{env_name('graph_backend')}=sql keeps the graph in {env_name('database_url')}, which must be "
                    "SQLite or PostgreSQL; this one is not (unset the graph backend to use the embedded FalkorDB)"
                )
        return self

    @model_validator(mode="after")
    def _register_secrets(self) -> Settings:
        """Every password, token and key the settings hold is redacted from whatever is printed or stored."""
        for value in (self.openai_api_key, self.milvus_token, self.neo4j_password):
            register_secret(value)
        for url in (
            self.falkordb_url,
            self.milvus_uri,
            self.neo4j_uri,
            self.database_url,
            self.checkpoint_url,
            self.openai_base_url,
        ):
            if url and "://" in url:
                register_secret(urlsplit(url).password)
            elif url and "@" in url:  # no scheme ("user:pw@host port"): a driver still echoes it back whole
                register_secret(url.rpartition("@")[0].partition(":")[2])
        return self

    @property
    def milvus_target(self) -> str:
        return self.milvus_uri or str(self.home / "milvus.db")

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{self.home / 'executor.db'}"

    @property
    def llm_configured(self) -> bool:
        return bool(self.openai_api_key or self.openai_base_url)

    @property
    def graph_folder(self) -> Path:
        return self.home / "graph"

    def grading_of(self, kb_grading: str | None) -> str:
        """How a KB is graded: EXECUTOR_GRADING when set, else the KB's own, else DEFAULT_GRADING."""
        return self.grading or kb_grading or DEFAULT_GRADING

    def kb_thresholds(self, embedder_name: str, kb) -> Thresholds:
        """The thresholds one KB is graded with: its catalog row's grading (`kb.grading`) and own model
        (`kb.grading_model`, None: the embedder's shared preset)."""
        return self.thresholds(embedder_name, kb.grading, kb.grading_model, kb.name)

    def thresholds(
        self, embedder_name: str, grading: str | None = None, kb_model: Any = None, kb: str = ""
    ) -> Thresholds:
        """The levels' thresholds for one embedder; `grading` is the KB's own (`knowledge_base.grading`),
        `kb_model` the KB's own fitted model as stored (JSON), `kb` its name for errors."""
        ranked = self.grading_of(grading) == "ranker"
        hand_set_hr = None  # a HIGHLY_RELEVANT threshold set by hand in config.yaml (not by a fitted model)
        own = KbModel.parse(kb, kb_model) if ranked and kb_model is not None else None
        if own is not None and own.embedder == embedder_name:
            # fitted on this KB's questions, its thresholds are on its own probability: config.yaml's
            # shared values (another model's scale) do not apply; the flat env overrides below still do
            values = own.thresholds.model_dump()
        else:
            presets = RANKER_PRESETS if ranked else EMBEDDER_THRESHOLD_DEFAULTS
            base = presets.get(embedder_name) or EMBEDDER_THRESHOLD_DEFAULTS.get(embedder_name, Thresholds())
            values = base.model_dump()
            norm = self.retrieval.normalization
            for override in (norm, norm.embedders.get(embedder_name)):
                # a model written by `calibrate --write` (thresholds on its probability) means nothing to a KB
                # graded by similarity; hand-set thresholds apply to whichever grading is in force
                if override is not None and (ranked or override.ranker is None):
                    values.update(override.set_values())
                    if override.ranker is not None:  # fitted on its ranker's scores: never mixed with another's
                        values["answerability"] = override.answerability
                        values["highly_relevant_other_language_threshold"] = (
                            override.highly_relevant_other_language_threshold
                        )
                    elif override.highly_relevant_threshold is not None:
                        hand_set_hr = override.highly_relevant_threshold
        flat = {
            "max_l2_distance": self.max_l2_distance,
            "highly_relevant_threshold": self.highly_relevant_threshold,
            "reference_threshold": self.reference_threshold,
        }
        values.update({k: v for k, v in flat.items() if v is not None})
        if values.get("supplement_threshold") is not None and values.get("reference_threshold") is not None:
            # a hand-lowered REFERENCE lowers the supplements' bar with it (it is never above REFERENCE)
            values["supplement_threshold"] = min(values["supplement_threshold"], values["reference_threshold"])
        if values.get("highly_relevant_other_language_threshold") is not None:
            # hand-set thresholds carry the calibrated other-language one with them: never below REFERENCE, and
            # a hand-raised HIGHLY_RELEVANT raises it too (a page in another language is never easier to call HR)
            hand_set_hr = self.highly_relevant_threshold if self.highly_relevant_threshold is not None else hand_set_hr
            values["highly_relevant_other_language_threshold"] = max(
                values["highly_relevant_other_language_threshold"],
                values.get("reference_threshold") or 0.0,
                hand_set_hr if hand_set_hr is not None else 0.0,
            )
        try:
            return Thresholds(**values)
        except ValidationError as exc:
            raise ConfigError(
                f"invalid relevance thresholds for {embedder_name}: "
                f"{exc.errors()[0]['msg'].removeprefix('Value error, ')}"
                f"{self._set_by(flat)}"
            ) from exc

    def repeat_thresholds(self, embedder_name: str) -> RepeatThresholds:
        values = REPEAT_THRESHOLD_DEFAULTS.get(embedder_name, RepeatThresholds()).model_dump()
        if embedder_name in self.retrieval.repeats.embedders:
            values.update(self.retrieval.repeats.embedders[embedder_name].set_values())
        flat = {
            "overlap_threshold": self.repeat_overlap_threshold,
            "miss_overlap_threshold": self.repeat_miss_overlap_threshold,
        }
        values.update({k: v for k, v in flat.items() if v is not None})
        try:
            return RepeatThresholds(**values)
        except ValidationError as exc:
            raise ConfigError(
                f"invalid repeat thresholds for {embedder_name}: {exc.errors()[0]['msg']}"
                f"{self._set_by({f'repeat_{k}': v for k, v in flat.items()})}"
            ) from exc

    @staticmethod
    def _set_by(flat: dict[str, float | None]) -> str:
        """Where thresholds that do not fit together were set: the variables, else config.yaml."""
        names = [env_name(k) for k, v in flat.items() if v is not None]
        return f" (set by {', '.join(names)})" if names else f" (set in {config_path()} or by `executor calibrate`)"

    def ensure_home(self) -> Path:
        """EXECUTOR_HOME, created private (0700): it holds the session memory, checkpoints and the graph."""
        try:
            return private_dir(self.home)
        except OSError as exc:  # a file on its way (EXECUTOR_HOME=a-file/sub), a read-only disk, ...
            raise ConfigError(
                f"invalid setting EXECUTOR_HOME: cannot create the folder {self.home} ({exc.strerror or exc})"
            ) from exc


def _driver_installed(url, dialect) -> None:
    """The driver a database URL names is imported only when the first command connects: `mysql://` (SQLAlchemy's
    default driver for it, mysqlclient) was "ModuleNotFoundError: No module named 'MySQLdb'" there, from every
    command. A ValueError naming it, and one that is installed."""
    try:
        dialect.import_dbapi()
    except ImportError:
        backend, driver = url.get_backend_name(), url.get_driver_name()
        hint = {
            "mysql": "mysql+pymysql://... with pip install pymysql",
            "mariadb": "mariadb+pymysql://... with pip install pymysql",
            "postgresql": "postgresql+psycopg://...",
        }
        other = f"; name one that is, such as {hint[backend]}" if backend in hint else ""
        raise ValueError(f"the {backend} driver {driver!r} is not installed{other}") from None


def _url_problem(exc: ValueError, url: str) -> str:
    """What is wrong with a URL, without the URL (it may hold a password)."""
    text = str(exc)
    host = url.split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]
    if "IPv6" in text or (host.count(":") > 1 and "[" not in host):
        return "an IPv6 address must be in brackets, whole: scheme://[::1]:port"
    if "int()" in text or "port" in text.lower():
        return "the port is not a number from 1 to 65535"
    return "cannot be parsed"


def env_name(field: str) -> str:
    """The environment variable a settings field is read from (the first alias, or EXECUTOR_<FIELD>)."""
    info = Settings.model_fields.get(field)
    alias = info.validation_alias if info is not None else None
    if isinstance(alias, AliasChoices):
        return str(alias.choices[0])
    return f"EXECUTOR_{field.upper()}"


def _aliases(info) -> list[str]:
    alias = info.validation_alias
    return [str(a) for a in alias.choices] if isinstance(alias, AliasChoices) else []


def _set_variable(field: str) -> str | None:
    """The environment variable that set a settings field, as the user spelt it (`EXECUTOR_MILVUS_URI`, not the
    first alias `MILVUS_URI`), or None when none is set (case-insensitively, as pydantic-settings reads them)."""
    info = Settings.model_fields.get(field)
    names = (_aliases(info) if info is not None else []) or [f"EXECUTOR_{field}"]
    present = {k.upper(): k for k, v in os.environ.items() if v}  # an empty one is unset (env_ignore_empty)
    return next((present[name.upper()] for name in names if name.upper() in present), None)


def _from_env(field: str) -> bool:
    return _set_variable(field) is not None


def settings_error(exc: ValidationError) -> ConfigError:
    """A pydantic error as one line that names the setting (never its value: it may be a secret)."""
    err = exc.errors()[0]
    loc = [str(p) for p in err.get("loc", ())]
    if loc:  # a field read through an alias is reported under the alias's first spelling: its own name here
        loc[0] = next((name for name, info in Settings.model_fields.items() if loc[0] in _aliases(info)), loc[0])
    path = ".".join(loc) or "settings"
    where = path
    if loc and loc[0] in Settings.model_fields:
        variable = _set_variable(loc[0]) or env_name(loc[0])
        if len(loc) == 1:  # the variable that set it, else the config file (a value there is no variable's)
            where = f"{variable if _from_env(loc[0]) or not config_path().is_file() else config_path()} ({path})"
        else:  # a key inside a structured setting: the variable holding it, else the config file
            where = f"{variable if variable in os.environ else config_path()} ({path})"
    problem = f"unknown key {loc[-1]!r}" if err["type"] == "extra_forbidden" else err["msg"]
    if not loc:  # two settings that do not go together: the message names both
        return ConfigError(f"invalid settings: {problem.removeprefix('Value error, ')}")
    return ConfigError(f"invalid setting {where}: {problem.removeprefix('Value error, ')}")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    from pydantic_settings import SettingsError

    try:
        return Settings()
    except ValidationError as exc:
        raise settings_error(exc) from exc
    except SettingsError as exc:  # a variable holding JSON (EXECUTOR_RETRIEVAL) that is not JSON
        import re

        field = re.search(r'field "(\w+)"', str(exc))
        where = env_name(field.group(1)) if field else "a setting"
        raise ConfigError(f"invalid setting {where}: not valid JSON") from exc
