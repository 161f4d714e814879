"""Messages that name the input as the user wrote it (hostile19 finding 11): a front-matter value of the wrong kind
in YAML's words ("should be a list of words, not a int" read as our slip, and named Python's type), a relation type
as typed (not upper-cased), a control character escaped once (a repr doubled its backslash)."""

import pytest

from executor.retrieval.documents import parse_text


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("5", "a number"),
        ("2.5", "a number"),
        ("true", "true or false"),
        ("{a: 1}", "a mapping"),
        ("2024-01-01", "a date"),
    ],
)
def test_a_keywords_value_of_the_wrong_kind_is_named_as_yaml_names_it(value, said):
    doc = parse_text("p.md", f"---\ntitle: T\nkeywords: {value}\n---\n# T\n\nBody.\n")
    assert f"front matter 'keywords' should be a list of words, not {said}; ignored" in doc.warnings, doc.warnings


def test_an_unknown_relation_type_is_echoed_as_typed():
    from executor.core.errors import InputError
    from executor.stores.knowledge_graph import relation_types

    with pytest.raises(InputError) as caught:
        relation_types(["depends_on", "`x`) DETACH DELETE n //"])
    # it read "'`X`) DETACH DELETE N //'": the user's input upper-cased
    assert str(caught.value).startswith("unknown relation type '`x`) DETACH DELETE n //' (known: "), caught.value
    assert relation_types(["depends_on", "Depends_On"]) == ["DEPENDS_ON"]


def test_a_control_character_in_an_entity_type_is_escaped_once():
    from executor.core.errors import InputError
    from executor.retrieval.knowledge_bases import graph_config

    with pytest.raises(InputError) as caught:
        graph_config(["Soft\x1bware"], None)
    assert str(caught.value).startswith("--entities: 'Soft\\x1bware' is not an entity type"), caught.value
