"""The tool table: every tool the executor LLM (and an MCP host) may call, as one immutable table per process.

An entry holds the argument schema (a pydantic model whose class name is the tool name the LLM sees; it is
also how arguments are validated), the handler (bound to the services it declares: `executor/tools/handlers.py`),
how its result reads to the LLM (`render`, from `executor/prompts/results.py`), whether the tool counts against
the lookup budget and the PRECISE stop, and one prompt line per language. The composition root builds the table
(`agent.runtime.Runtime.tools`: `agent_tools` here, plus a host's own tools such as feedback on answers, which
the executor LLM's prompt, guard and eval never see) and hands it to the graph and the MCP server; nothing is
registered at import. Adding a tool is one entry in `agent_tools` plus its handler.
`ToolTable.invoke` is the one way a tool runs, and `ToolTable.run` writes its `tool_invocation` row (the
handlers' services write none: they hand the row's raw scores back in `ToolOutput.details`). `ToolTable.answer`
is invoke, then graph expansion when the result calls for it: the command line's and the MCP server's lookup; the
graph runs the same two steps as two nodes (`call_tools`, `graph_expand`), so that a fork can start between them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from executor.core.errors import ExecutorError, InputError
from executor.core.results import KGResult
from executor.core.validation import check_session_id
from executor.prompts.executor import unavailable_message
from executor.prompts.results import kg_text, lookup_text
from executor.stores.knowledge_graph import MAX_HOPS, RELATION_TYPES, relation_pattern
from executor.tools import handlers as _h
from executor.tools.call import Answer, ToolCall, ToolOutput
from executor.tools.call import log_call as _log_call

if TYPE_CHECKING:
    from executor.core.results import LookupResult
    from executor.core.settings import Settings
    from executor.retrieval.kg_query import KnowledgeGraphQuery
    from executor.retrieval.lookup import LookupService
    from executor.retrieval.traversal_cache import TraversalCache
    from executor.stores.catalog import Catalog
    from executor.stores.graph_store import GraphStore
    from executor.stores.invocation_log import InvocationLog


def listed(value):
    """An array argument a host sent as one string (a CLI's `--tool-arg relations=DEPENDS_ON`, or its JSON text):
    the list it means. Anything else is left to the schema."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                return json.loads(text)
            except ValueError:
                return value
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


class ToolArgs(BaseModel):
    """A tool's arguments: an argument the tool does not take is refused by name, not dropped silently (a host
    or LLM that misspells `missing_dimension` would otherwise run a different lookup than it meant)."""

    model_config = ConfigDict(extra="forbid")


class lookup_knowledge(ToolArgs):  # noqa: N801 - the class name is the tool name the LLM sees
    """Search the knowledge base. Returns documents with a relevance level and a completeness hint."""

    query: str = Field(description="what to look up", min_length=1, max_length=2000)
    missing_dimension: str | None = Field(
        default=None, description="after a REFERENCE result: the specific dimension the results lacked", max_length=200
    )


class navigate_graph(ToolArgs):  # noqa: N801
    """Show how an entity relates to others in the knowledge graph, or the paths between two entities."""

    entity: str = Field(
        description="an entity name, e.g. a product, error code or concept", min_length=1, max_length=200
    )
    target: str | None = Field(
        default=None, description="a second entity: show the paths between the two", max_length=200
    )
    relations: list[str] | None = Field(
        default=None,
        description=f'relation types to follow, any of {", ".join(RELATION_TYPES)}, e.g. ["DEPENDS_ON"] '
        "for what the entity depends on; all when omitted",
        max_length=len(RELATION_TYPES),
    )
    hops: int | None = Field(
        default=None,
        ge=1,
        le=MAX_HOPS,
        description=f"how many relations deep (1-{MAX_HOPS}); default 2, or 3 between two entities",
    )
    outgoing: bool = Field(
        default=False,
        description="only relations that point away from the entity (what it depends on, not what depends on it)",
    )

    @field_validator("hops", mode="before")
    @classmethod
    def _hops_no_boolean(cls, value):
        # pydantic's lax mode reads true as 1: `"hops": true` ran one hop where the host meant something else
        if isinstance(value, bool):
            raise ValueError(f"a number of relations (1-{MAX_HOPS}) is expected, not {str(value).lower()}")
        return value

    @field_validator("relations", mode="before")
    @classmethod
    def _relations_list(cls, value):
        return listed(value)

    @field_validator("relations")
    @classmethod
    def _known_relations(cls, value: list[str] | None) -> list[str] | None:
        if not value:
            return None
        try:  # the same whitelist the graph commands and the graph store check
            return relation_pattern(value).split("|")
        except InputError as exc:
            raise ValueError(str(exc)) from None


class query_knowledge_graph(ToolArgs):  # noqa: N801
    """Search several knowledge bases at once (1-10); returns graded results plus graph nodes and edges."""

    knowledge_base_ids: list[str] = Field(
        description="knowledge base names (duplicates are folded)", min_length=1, max_length=10
    )
    query: str = Field(description="what to look for", min_length=1, max_length=2000)

    @field_validator("knowledge_base_ids", mode="before")
    @classmethod
    def _folded(cls, value):
        """Duplicates folded before the 1-10 bound is checked: eleven copies of one id ask for one KB. An id that is
        no string (`null`, a number) is left as it is, for the `list[str]` check to refuse by its value: made a
        string, `null` was "unknown knowledge base 'None'"."""
        value = listed(value)
        if isinstance(value, list):
            folded: list = []
            for k in value:
                k = k.strip() if isinstance(k, str) else k
                if k != "" and k not in folded:
                    folded.append(k)
            return folded
        return value


class list_knowledge_bases(ToolArgs):  # noqa: N801
    """List the knowledge bases: name, description, document count, and whether each has a knowledge graph."""


@dataclass(frozen=True)
class Tool:
    args: type[BaseModel]
    handler: Callable[[ToolCall, BaseModel], ToolOutput]
    prompt: dict[str, str]  # one line per language for the system prompt's tool list
    render: Callable[[Any], str] | None = None  # the text the LLM reads, from the handler's `result`
    retrieval: bool = False  # counts against the lookup budget; the PRECISE stop applies
    query_field: str | None = None  # the argument the trace and the log show as the call's query
    output: type[BaseModel] | None = None  # the model of `result` a host gets as structured content (MCP)

    @property
    def name(self) -> str:
        return self.args.__name__

    @property
    def description(self) -> str:
        return (self.args.__doc__ or "").strip()

    def query_of(self, args) -> str | None:
        return args.get(self.query_field) if isinstance(args, dict) and self.query_field else None


LOOKUP = lookup_knowledge.__name__  # the tool the eval and the offline planner count and propose
KG_QUERY = query_knowledge_graph.__name__
NAVIGATE = navigate_graph.__name__
AGENT_TOOL_NAMES = (LOOKUP, KG_QUERY, NAVIGATE, list_knowledge_bases.__name__)  # what `agent_tools` builds
RETRIEVAL_TOOLS = frozenset({LOOKUP, KG_QUERY})  # those of them that count against the lookup budget (`retrieval`)


class ArgumentError(InputError, ValueError):
    """A tool's arguments that its schema refuses: `field` (dotted, "arguments" for the whole) and `problem` read
    as one line, `field: problem`; `kind` is pydantic's error type ("blank" for a required text of spaces) and
    `limit` the bound it broke, for a caller that names the field its own way (the command line's options)."""

    def __init__(self, field: str, problem: str, kind: str = "", limit: int | None = None, value=None):
        super().__init__(f"{field}: {problem}")
        self.field, self.problem, self.kind, self.limit, self.value = field, problem, kind, limit, value


def parse_arguments(schema: type[BaseModel], args) -> BaseModel:
    """Validated arguments of the tool whose schema is `schema`, or ArgumentError (a ValueError) with one
    readable line."""
    name = schema.__name__
    if args is None and not schema.model_fields:
        args = {}
    if not isinstance(args, dict):
        raise ArgumentError("arguments", "must be a JSON object")
    try:
        parsed = schema.model_validate(args)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            takes = ", ".join(schema.model_fields) or "no arguments"
            raise ArgumentError(where[:80], f"not an argument of {name} (it takes {takes})", err["type"]) from None
        ctx = err.get("ctx") or {}
        limit = ctx.get("max_length", ctx.get("min_length"))
        problem = err["msg"].removeprefix("Value error, ")
        raise ArgumentError(where, problem, err["type"], limit, err.get("input")) from None
    for field_name, value in parsed.model_dump().items():
        if (
            isinstance(value, str)
            and field_name in schema.model_fields
            and schema.model_fields[field_name].is_required()
        ):
            if not value.strip():
                raise ArgumentError(field_name, "must not be blank", "blank", value=value)
    return parsed


def tool_map(tools: Iterable[Tool]) -> Mapping[str, Tool]:
    """Tools by name, in order, read-only."""
    return MappingProxyType({t.name: t for t in tools})


@dataclass(frozen=True)
class ToolTable:
    """The tools of one process: `agent`, the executor LLM's (a host gets them too), and `host`, those only a host
    gets (MCP). `log` is where every call's `tool_invocation` row goes; `catalog` is read once per call;
    `expand(result)` widens a lookup through the knowledge graph (`retrieval.expansion.GraphExpander.expand`, which
    never raises for a graph that is down and records what it sends in the action memory)."""

    agent: Mapping[str, Tool]
    host: Mapping[str, Tool]
    log: InvocationLog
    catalog: Catalog
    expand: Callable[[LookupResult], Any]

    @cached_property
    def all(self) -> Mapping[str, Tool]:
        """Every tool, the executor's first: what the MCP server serves."""
        return MappingProxyType({**self.agent, **self.host})

    def named(self, name: str) -> Tool | None:
        return self.all.get(name)

    def log_call(self, session: str, name: str, kb: str | None, args, **fields) -> None:
        """The `tool_invocation` row of a call the guard blocked or refused (it never reached `invoke`)."""
        tool = self.named(name)
        _log_call(self.log, session, name, kb, args, query_field=tool.query_field if tool else None, **fields)

    def run(self, name: str, call: ToolCall, args: BaseModel) -> ToolOutput:
        """Run one tool on arguments already parsed, and write its `tool_invocation` row whatever happens: the
        one place rows of calls that ran are written. An ExecutorError is logged, then raised to the caller."""
        tool = self.all[name]
        check_session_id(call.session)  # before the row: a session id that is not one is not written anywhere
        started = time.perf_counter()
        out, error = None, None
        try:
            with self.catalog.reading():  # one read of each KB row per call, however many steps need it
                out = tool.handler(call, args)
            if tool.render is not None:
                out.text = tool.render(out.result)
            return out
        except Exception as exc:  # a bug too: its row says the call failed
            error = str(exc) if isinstance(exc, ExecutorError) else f"{exc.__class__.__name__}: {exc}"
            raise
        finally:
            row = {"error": error, "kb": call.kb, **(out.row if out else {})}
            _log_call(
                self.log,
                call.session,
                name,
                row.pop("kb"),
                args.model_dump(),
                query_field=tool.query_field,
                **row,
                latency_ms=round((time.perf_counter() - started) * 1000, 2),
                retrieval_details=(out.details if out else None) or None,
            )

    def invoke(self, name: str, call: ToolCall, args) -> ToolOutput:
        """Run one tool with validated arguments (ValueError when they are not); an error becomes the output.

        Only the caller's own mistakes (InputError) go back to it as "error: …", for it to fix. When a retrieval
        tool's store or configuration fails, the text says the knowledge base is unavailable (never "nothing
        found") and `failure` is set: the graph ends the turn in it, MCP returns it as a tool error. The other
        tools (the graph view, the list) only tell the caller, which can go on without them.
        """
        tool = self.all[name]
        parsed = parse_arguments(tool.args, args)
        try:
            return self.run(name, call, parsed)
        except ExecutorError as exc:
            error = str(exc)
            if tool.retrieval and not isinstance(exc, InputError):
                return ToolOutput(
                    text=unavailable_message(call.lang, error),
                    error=error,
                    failure=error,
                    trace={"error": error},
                    raised=exc,
                )
            return ToolOutput(text=f"error: {exc}", error=error, trace={"error": error}, raised=exc)

    def answer(self, name: str, call: ToolCall, args, expand: bool = True) -> Answer:
        """`invoke`, then graph expansion when the result calls for it (a REFERENCE or thin lookup in a KB with a
        graph, `ToolOutput.expandable`) and `expand` is on: what the CLI's `lookup` and an MCP host get."""
        out = self.invoke(name, call, args)
        if expand and out.expandable is not None:
            return Answer(out, self.expand(out.expandable))
        return Answer(out)


@dataclass(frozen=True)
class ToolServices:
    """What the executor's tools run on. The costly services are providers, called on a call's first use, so a
    call that needs no graph never starts the graph server."""

    settings: Settings
    catalog: Catalog
    lookup_service: Callable[[], LookupService]
    kg: Callable[[], KnowledgeGraphQuery]
    traversals: Callable[[], TraversalCache]
    graph: Callable[[], GraphStore]


def agent_tools(services: ToolServices) -> tuple[Tool, ...]:
    """The four tools of the executor, each handler bound to the services it declares."""
    s = services
    return (
        Tool(
            lookup_knowledge,
            _h.make_lookup(s.catalog, s.lookup_service, s.settings.graph_min_results),
            render=lookup_text,
            retrieval=True,
            query_field="query",
            prompt={
                "zh": "lookup_knowledge(query, missing_dimension?)：检索知识库。"
                "结果带 relevance_level、completeness_hint 和 retrieved_domains_this_session。",
                "en": "lookup_knowledge(query, missing_dimension?): search the knowledge base. "
                "Each result carries relevance_level, completeness_hint and retrieved_domains_this_session.",
            },
        ),
        Tool(
            query_knowledge_graph,
            _h.make_kg_query(s.kg),
            render=kg_text,
            retrieval=True,
            query_field="query",
            output=KGResult,
            prompt={
                "zh": "query_knowledge_graph(knowledge_base_ids, query)："
                "同时检索多个知识库（最多 10 个），返回结果以及图谱中的节点和关系。",
                "en": "query_knowledge_graph(knowledge_base_ids, query): search several knowledge bases at once "
                "(up to 10); returns results plus graph nodes and edges.",
            },
        ),
        Tool(
            navigate_graph,
            _h.make_navigate(
                s.catalog, s.graph, s.traversals, s.settings.graph_hops, s.settings.graph_max_nodes_per_hop
            ),
            query_field="entity",
            prompt={
                "zh": "navigate_graph(entity, target?, relations?, hops?, outgoing?)："
                "在知识图谱中查看实体之间的关系路径。",
                "en": "navigate_graph(entity, target?, relations?, hops?, outgoing?): "
                "show how entities relate in the knowledge graph.",
            },
        ),
        Tool(
            list_knowledge_bases,
            _h.make_list_kbs(s.catalog),
            prompt={
                "zh": "list_knowledge_bases()：列出知识库（名称、描述、文档数、是否有知识图谱）。",
                "en": "list_knowledge_bases(): list the knowledge bases "
                "(name, description, document count, knowledge graph or not).",
            },
        ),
    )
