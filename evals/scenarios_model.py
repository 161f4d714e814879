"""Eval scenarios: the YAML format, validated.

A scenario is one session of `turns`, run in order: each turn is a question
plus the tool calls an unconstrained LLM made for it (`proposals`, in order; a
list inside the list is one message with several calls), and what must hold
after that turn (`expect`). `question`/`proposals`/`expect` at the top level
are a one-turn scenario. One file may hold several scenarios, as a YAML list
or as several documents.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from executor.core import bounded_yaml
from executor.core.errors import InputError
from executor.tools.registry import AGENT_TOOL_NAMES


class Call(BaseModel):
    tool: str
    args: dict


class Expect(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_executed_lookups: int | None = Field(default=None, description="0: answered from what the session already has")
    min_executed_lookups: int | None = None
    cite_any: list[str] = Field(default_factory=list, description="doc_key prefixes; at least one must be cited")
    cite_all: list[str] = Field(default_factory=list, description="doc_key prefixes; each must be cited")
    first_level: list[str] | None = None
    must_block: list[int] = Field(default_factory=list, description="proposal indexes that must not run")
    must_allow: list[int] = Field(default_factory=list, description="proposal indexes that must run")
    rephrasings: list[int] = Field(
        default_factory=list,
        description=(
            "proposal indexes that rephrase a question the session already asked: the report counts those that ran "
            "and the pages they sent; one that sends a page outside cite_any / cite_all fails the turn"
        ),
    )
    no_answer: bool = False


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    proposals: list[list[Call]] = Field(default_factory=list)
    expect: Expect = Field(default_factory=Expect)

    @field_validator("proposals", mode="before")
    @classmethod
    def _batches(cls, value, info: ValidationInfo):
        """`- lookup_knowledge: {query: x}` is a batch of one; a list of such mappings is one batch. The tools a
        proposal may name are the executor's, or those of the validation context's `tools` (a test's own table)."""
        known = (info.context or {}).get("tools", AGENT_TOOL_NAMES)
        batches = []
        for item in value or []:
            calls = item if isinstance(item, list) else [item]
            batch = []
            for call in calls:
                if not (isinstance(call, dict) and len(call) == 1):
                    raise ValueError("each proposal is a mapping of one tool name to its arguments")
                ((tool, args),) = call.items()
                if tool not in known:
                    raise ValueError(f"unknown tool {tool!r} in proposals")
                batch.append({"tool": tool, "args": args if isinstance(args, dict) else {}})
            batches.append(batch)
        return batches

    @property
    def flat_proposals(self) -> list[tuple[int, Call]]:
        """(batch number, call) in proposal order."""
        return [(b, call) for b, batch in enumerate(self.proposals) for call in batch]


ONE_TURN_KEYS = ("question", "proposals", "expect")


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9\-]{0,63}$")
    lang: Literal["zh", "en"]
    kb: str = "sample"
    tags: list[str] = Field(default_factory=list)
    turns: list[Turn] = Field(min_length=1)
    source: str = ""
    # the folder the scenario's knowledge base is ingested from when the catalog lacks it, relative to the
    # repository (documentation kept outside it, e.g. ../shared/corpora/helm/docs), or a `.sh` script that builds
    # that folder (`sh SCRIPT OUT_DIR`, e.g. copying docs installed on the machine); absent: the scenario is skipped
    corpus: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_turn(cls, data):
        """Top-level question/proposals/expect are a scenario of one turn."""
        if not isinstance(data, dict) or not any(k in data for k in ONE_TURN_KEYS):
            return data
        if "turns" in data:
            raise ValueError("a scenario has either turns or question/proposals/expect, not both")
        turn = {k: data[k] for k in ONE_TURN_KEYS if k in data}
        return {k: v for k, v in data.items() if k not in ONE_TURN_KEYS} | {"turns": [turn]}

    @property
    def question(self) -> str:
        return self.turns[0].question

    @property
    def flat_proposals(self) -> list[tuple[int, Call]]:
        """(batch number, call) over all turns, in proposal order."""
        return [p for turn in self.turns for p in turn.flat_proposals]


def load_scenarios(paths: list[Path]) -> list[Scenario]:
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(path.rglob("*.yaml")) + sorted(path.rglob("*.yml"))
        elif path.exists():
            files.append(path)
        else:
            raise InputError(f"{path}: no such file or folder")
    scenarios: list[Scenario] = []
    for file in files:
        try:
            # read as label files are: a named pipe with no writer waited forever, and a huge file was read whole
            documents = list(yaml.safe_load_all(bounded_yaml.read_text(file, bounded_yaml.LABELS)))
        except yaml.YAMLError as exc:
            raise InputError(f"{file}: not valid YAML ({exc.__class__.__name__})") from exc
        except (bounded_yaml.YamlBoundError, UnicodeDecodeError) as exc:
            raise InputError(f"{file}: {exc}") from exc
        except OSError as exc:
            raise InputError(f"{file}: cannot read it ({exc.strerror or exc})") from exc
        for doc in documents:
            for raw in doc if isinstance(doc, list) else [doc] if doc else []:
                try:
                    scenarios.append(Scenario.model_validate({**raw, "source": str(file)}))
                except (ValidationError, TypeError) as exc:
                    first = exc.errors()[0] if isinstance(exc, ValidationError) else {"loc": (), "msg": str(exc)}
                    where = ".".join(str(p) for p in first["loc"])
                    raise InputError(
                        f"{file}: scenario {raw.get('id', '?') if isinstance(raw, dict) else '?'}: "
                        f"{where} {first['msg']}".strip()
                    ) from exc
    ids = [s.id for s in scenarios]
    duplicate = next((i for i in ids if ids.count(i) > 1), None)
    if duplicate:
        raise InputError(f"scenario id {duplicate!r} is used twice")
    if not scenarios:
        raise InputError("no scenarios found")
    return scenarios
