"""The tools the executor LLM may call: their argument schemas, which are also how arguments are validated."""

from __future__ import annotations

from pydantic import BaseModel, Field, ValidationError


class lookup_knowledge(BaseModel):  # noqa: N801 - the class name is the tool name the LLM sees
    """Search the knowledge base. Returns documents with a relevance level and a completeness hint."""

    query: str = Field(description="what to look up", min_length=1, max_length=2000)
    missing_dimension: str | None = Field(
        None, description="after a REFERENCE result: the specific dimension the results lacked", max_length=200
    )


class navigate_graph(BaseModel):  # noqa: N801
    """Show how an entity relates to others in the knowledge graph, or the paths between two entities."""

    entity: str = Field(description="an entity name, e.g. a product, error code or concept", min_length=1, max_length=200)
    target: str | None = Field(None, description="a second entity: show the paths between the two", max_length=200)
    relations: list[str] | None = Field(
        None, description="only these relation types, e.g. [\"DEPENDS_ON\"] for what the entity depends on", max_length=6
    )
    outgoing: bool = Field(False, description="only relations that point away from the entity (what it depends on, "
                                              "not what depends on it)")


class query_knowledge_graph(BaseModel):  # noqa: N801
    """Search several knowledge bases at once (1-10); returns graded results plus graph nodes and edges."""

    knowledge_base_ids: list[str] = Field(description="knowledge base names", min_length=1, max_length=10)
    query: str = Field(description="what to look for", min_length=1, max_length=2000)


TOOLS: dict[str, type[BaseModel]] = {t.__name__: t for t in (lookup_knowledge, query_knowledge_graph, navigate_graph)}
LOOKUP = lookup_knowledge.__name__
KG_QUERY = query_knowledge_graph.__name__
NAVIGATE = navigate_graph.__name__
RETRIEVAL = (LOOKUP, KG_QUERY)  # the tools the lookup budget and the PRECISE stop apply to


def parse_arguments(name: str, args) -> BaseModel:
    """Validated arguments, or ValueError with one readable line."""
    schema = TOOLS[name]
    if not isinstance(args, dict):
        raise ValueError("arguments must be a JSON object")
    try:
        parsed = schema.model_validate(args)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        raise ValueError(f"{where}: {err['msg']}") from None
    for field_name, value in parsed.model_dump().items():
        if isinstance(value, str) and field_name in schema.model_fields and schema.model_fields[field_name].is_required():
            if not value.strip():
                raise ValueError(f"{field_name}: must not be blank")
    return parsed
