"""The edges of starting a killed Milvus Lite server again (hostile17 finding 13): the statistics read (`texts`)
was not restarted ("Fail connecting to server"), and a `milvus.db` deleted under its running server was made again,
empty, by the restart, so the read said "collection not found" as if the KB had never been ingested. Real Milvus
Lite, in process, its server killed with SIGKILL."""

import os
import signal

import pytest
from milvus_lite.server_manager import server_manager_instance
from test_lite_recovery import home, only_lite_server_of, pristine  # noqa: F401 - home, pristine: fixtures

from executor.core.errors import BackendError
from executor.stores.vectors import MilvusVectorStore

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def store(home):  # noqa: F811 - the imported fixture, requested
    """`home`: a copy of an ingested home (test_lite_recovery's fixtures); a store on its Lite file, in process."""
    db = home / "milvus.db"
    store = MilvusVectorStore(str(db))
    yield store, db
    store.close()
    server_manager_instance.release_server(str(db))


def kill_server(db) -> None:
    os.kill(only_lite_server_of(db, os.getpid()), signal.SIGKILL)


def test_the_statistics_read_starts_a_killed_server_again(store):
    store, db = store
    chunks = store.count("sample")
    kill_server(db)
    assert len(list(store.texts("sample"))) == chunks > 0


def test_a_store_file_deleted_under_its_killed_server_is_said_to_be_gone_not_empty(store):
    store, db = store
    store.count("sample")
    db.unlink()
    kill_server(db)
    with pytest.raises(BackendError) as failed:
        store.count("sample")
    assert str(failed.value) == (
        f"the Milvus Lite file {db} is gone (deleted while in use); run `executor ingest` again"
    )
    assert not db.exists()  # nothing made in its place
