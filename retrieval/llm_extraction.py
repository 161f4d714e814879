"""Entity and relation extraction by an LLM, constrained to the knowledge base's node and relation types.

Used at ingest when an LLM is configured. Results are cached per document
content and model, so re-ingesting unchanged documents costs no LLM calls.
"""

from __future__ import annotations

import json

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from stores.graph import RELATION_TYPES

MAX_DOC_CHARS = 6000
PROMPT = """Extract the entities and the relations between them from the document.
Entity types allowed: {entity_types}. Relation types allowed: {relation_types}.
Use only these types; leave out anything that fits none. Use names as they appear in the document.
weight is your confidence that the relation holds, from 0 to 1."""


class ExtractedEntity(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    type: str


class ExtractedRelation(BaseModel):
    source: str = Field(min_length=1, max_length=200)
    type: str
    target: str = Field(min_length=1, max_length=200)
    weight: float = Field(0.7, ge=0, le=1)


class Extraction(BaseModel):
    """Entities and relations found in one document."""

    entities: list[ExtractedEntity] = Field(default_factory=list)
    relations: list[ExtractedRelation] = Field(default_factory=list)


def constrain(extraction: Extraction, entity_types: list[str], relation_types: list[str]) -> Extraction:
    """Drop whatever the model returned outside the allowed types (models do not always obey)."""
    allowed_rel = [r for r in relation_types or RELATION_TYPES if r in RELATION_TYPES]
    entities = [e for e in extraction.entities if not entity_types or e.type in entity_types]
    relations = [r.model_copy(update={"type": r.type.upper()}) for r in extraction.relations]
    return Extraction(entities=entities, relations=[r for r in relations if r.type in allowed_rel and r.source != r.target])


class LLMExtractor:
    def __init__(self, model, model_name: str, entity_types: list[str], relation_types: list[str]):
        self.structured = model.with_structured_output(Extraction, method="function_calling")
        self.model_name = model_name
        self.entity_types = list(entity_types)
        self.relation_types = list(relation_types or RELATION_TYPES)

    def extract(self, title: str, body: str) -> Extraction:
        prompt = PROMPT.format(entity_types=", ".join(self.entity_types) or "any",
                               relation_types=", ".join(self.relation_types))
        result = self.structured.invoke([SystemMessage(prompt), HumanMessage(f"# {title}\n\n{body[:MAX_DOC_CHARS]}")])
        if isinstance(result, dict):
            result = Extraction.model_validate(result)
        return constrain(result, self.entity_types, self.relation_types)

    def cache_key(self, content_hash: str) -> str:
        return json.dumps([self.model_name, content_hash, self.entity_types, self.relation_types])
