"""A new knowledge base's graph config, checked before anything is stored (`executor kb create`)."""

import pytest

from executor.core.errors import ExecutorError
from executor.retrieval.knowledge_bases import graph_config
from executor.stores.knowledge_graph import RELATION_TYPES


def test_no_entity_types_means_no_graph():
    assert graph_config([], None) == {}


def test_entities_with_the_relations_asked_for():
    config = graph_config(["Software", "Error_Code"], ["depends_on"])
    assert config == {"entity_types": ["Software", "Error_Code"], "relation_types": ["DEPENDS_ON"]}


def test_an_empty_relation_list_means_every_relation_type():
    assert graph_config(["Software"], [])["relation_types"] == list(RELATION_TYPES)


@pytest.mark.parametrize(
    "entities, relations, message",
    [
        (["Soft ware"], None, "is not an entity type"),
        (["x" * 41], None, "at most 40 characters"),
        ([], ["DEPENDS_ON"], "needs --entities as well as --relations"),
        (["Software"], ["MATCH (n) DETACH DELETE n"], "unknown relation type"),
    ],
)
def test_bad_configs_are_refused(entities, relations, message):
    with pytest.raises(ExecutorError, match=message):
        graph_config(entities, relations)
