"""Round eighteen's findings of severity 7-9 (evals/review/hostile18-findings.md, hostile18b-findings.md)."""

import pytest

from executor.core.errors import redact


# -- hostile18 #15, hostile18b #10: MySQL's own "(using password: YES)" is no credential ------------------------------
@pytest.mark.parametrize("said", ["YES", "NO"])
def test_mysqls_access_denied_keeps_whether_a_password_was_sent(said):
    text = f"(1045, \"Access denied for user 'root'@'127.0.0.1' (using password: {said})\")"
    assert redact(text) == text


def test_a_password_after_the_same_words_is_still_masked():
    assert redact("using password: hunter2") == "using password: ***"
    assert redact("password: YES-really-secret") == "password: ***"


# -- round eighteen (hostile18 #13, hostile18b #5): a database URL whose driver is not installed ---------------------
@pytest.mark.parametrize(
    ("url", "advice"),
    [
        ("mysql://root@127.0.0.1:3306/test", "mysql+pymysql://"),
        ("mysql+mysqldb://root:pw@127.0.0.1:3306/test", "mysql+pymysql://"),
        ("mariadb://root@127.0.0.1:3306/test", "mariadb+pymysql://"),
    ],
)
def test_a_database_url_naming_a_driver_that_is_not_installed_is_a_setting_to_fix(url, advice):
    from pydantic import ValidationError

    from executor.core.settings import Settings

    with pytest.raises(ValidationError, match=r"driver 'mysqldb' is not installed; name one that is, such as ") as err:
        Settings(database_url=url)
    assert advice in str(err.value)
    assert "pw" not in str(err.value)


def test_a_database_url_whose_driver_is_installed_passes():
    from executor.core.settings import Settings

    assert Settings(database_url="mysql+pymysql://root@127.0.0.1:3306/test").database_url


# -- hostile18b #6: a knowledge base id of `query_knowledge_graph` is the caller's text --------------------------------
@pytest.mark.parametrize("bad", ["x\x1b]52;c;SGk=\x07", "a\u202eb", "n\x00ul"])
def test_an_id_with_control_characters_is_shown_escaped_in_the_result_text(bad):
    from executor.core.results import KGResult
    from executor.prompts.results import kg_text

    result = KGResult(
        query="PgBouncer",
        errors=[{"knowledge_base_id": bad, "error": "invalid knowledge base name"}],
        warnings=[{"knowledge_base_id": bad, "message": "skipped"}],
    )
    text = kg_text(result)
    assert not any(ch in text for ch in "\x1b\x07\u202e\x00"), text
    assert text.count(repr(bad)[1:-1]) == 2, text


# -- hostile18b #11: `eval --policy llm` with no model is asked wrongly (exit 2), not a failure (exit 1) --------------
def test_policy_llm_without_a_model_is_an_input_error():
    from types import SimpleNamespace

    from evals.runner import llm_policy_model
    from executor.core.errors import InputError

    with pytest.raises(InputError, match="--policy llm needs EXECUTOR_LOCAL_MODEL"):
        llm_policy_model(SimpleNamespace(settings=SimpleNamespace(llm_configured=False)))


# -- hostile18b #8: a path too long is said to be too long, not to hold characters it does not hold ------------------
def test_a_path_over_the_limit_says_its_length():
    from executor.core.errors import InputError
    from executor.retrieval.documents import MAX_DOC_KEY_CHARS, check_doc_key

    deep = "d/" * 300 + "deep.md"
    with pytest.raises(InputError, match=rf"the path is {len(deep):,} characters long; at most {MAX_DOC_KEY_CHARS}"):
        check_doc_key(deep)
    assert check_doc_key("d/" * 197 + "deep.md") == "d/" * 197 + "deep.md"
