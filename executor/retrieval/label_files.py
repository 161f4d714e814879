"""Label files for calibration: a YAML list of mappings, each validated by a pydantic model.

Errors are one line naming the file and, where YAML or validation says, the place.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from executor.core import bounded_yaml
from executor.core.errors import InputError
from executor.core.validation import clean_query

M = TypeVar("M", bound=BaseModel)


def load_label_list(path: Path, model: type[M], shape: str) -> list[M]:
    """`shape` says what the list holds, for the error message (e.g. "{query, relevant} pairs")."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
    try:
        text = bounded_yaml.read_text(path, bounded_yaml.LABELS)
    except bounded_yaml.YamlBoundError as exc:
        raise InputError(f"--labels {path}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"--labels {path}: not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise InputError(f"--labels {path}: cannot be read ({exc.strerror or exc})") from exc
    try:
        raw = bounded_yaml.load(text, bounded_yaml.LABELS)
    except (bounded_yaml.YamlBoundError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: {exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or exc.__class__.__name__
        raise InputError(f"{path}: not valid YAML{where} ({problem})") from exc
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{path}: expected a list of {shape}")
    # YAML's loader keeps the last of a key given twice without a word: an entry's second `relevant: []` made an
    # answered question an off-topic one, measured and fitted as such (config.yaml is refused the same way)
    twice = bounded_yaml.duplicate_keys(text)
    if twice:
        entry, _, key = twice[0].partition(".")
        raise InputError(f"{path}: entry {int(entry) + 1} gives {key[:40]!r} twice; keep one")
    out = []
    seen: dict[tuple, int] = {}  # a label's questions -> the entry that gave them first
    for n, item in enumerate(raw, 1):
        if isinstance(item, dict):
            _misspelt_keys(path, n, item, model)
        try:
            label = model.model_validate(item)
        except ValidationError as exc:
            # which entry: in a file of hundreds, "relevant: Input should be a valid list" points at none, and an
            # entry that is no mapping had no field at all to name ("FILE: : Input should be ...")
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"])
            raise InputError(f"{path}: entry {n}{f' ({field})' if field else ''}: {err['msg']}") from exc
        questions = _askable(path, n, label)
        if questions in seen:
            # asked twice, the question counts twice in every figure, and k-fold calibration tests it on a model
            # fitted on its twin (or on the opposite label, when the two disagree)
            raise InputError(f"{path}: entry {n} repeats the question of entry {seen[questions]}; keep one")
        seen[questions] = n
        out.append(label)
    return out


def _misspelt_keys(path: Path, n: int, item: dict, model: type[BaseModel]) -> None:
    """A key that is nearly one of the model's fields is a typo, not a note: `relevent: [...]` left `relevant`
    empty, which calls the question one nothing in the KB answers (an off-topic label, measured and fitted as
    one). Other keys stay, as notes (`miss: true` in a repeats file)."""
    fields = list(model.model_fields)
    for key in item:
        if str(key) in fields:
            continue
        near = difflib.get_close_matches(str(key).lower(), fields, n=1, cutoff=0.7)
        if near:
            raise InputError(f"{path}: entry {n}: unknown key {str(key)[:40]!r}; did you mean {near[0]!r}?")


def _askable(path: Path, n: int, label: BaseModel) -> tuple[str, ...]:
    """Each question of a label (its text fields: `query`, `earlier`, `later`) as a lookup would take it (its
    spaces folded): one a lookup refuses (blank, control characters, over the length limit) was graded anyway,
    and counted as an answerable question the KB found nothing for."""
    from executor.core.settings import get_settings

    limit = get_settings().max_query_chars
    questions = []
    for name, info in type(label).model_fields.items():
        if info.annotation is str or info.annotation == "str":
            try:
                questions.append(clean_query(getattr(label, name), limit, "the text"))
            except InputError as exc:
                raise InputError(f"{path}: entry {n} ({name}): {exc} (a lookup refuses it)") from None
    return tuple(questions)
