"""A Milvus Lite server that has just started answers a read "Mmap manager has not been init" for a moment (seen in
CI under load, session 24): that read is made again, and never reported as a damaged file, which told the user to
move the file away. No server here: the read is a stand-in raising what milvus-lite 2.5.1 raises."""

import pytest
from pymilvus.exceptions import MilvusException

from executor.core.errors import BackendError
from executor.stores.vectors import MilvusVectorStore

NOT_READY = (
    'Assert "init_flag_ == true" => Mmap manager has not been init. at '
    "/workspace/milvus-lite/thirdparty/milvus/internal/core/src/storage/MmapManager.h"
)


def failing(times: int):
    calls = []

    def read():
        calls.append(1)
        if len(calls) <= times:
            raise MilvusException(message=NOT_READY)
        return "hits"

    return read, calls


def test_a_read_the_starting_server_is_not_ready_for_is_made_again(tmp_path):
    store = MilvusVectorStore(str(tmp_path / "milvus.db"), timeout_s=5)
    read, calls = failing(3)
    assert store._read("sample", read) == "hits"
    assert len(calls) == 4


def test_a_server_never_ready_is_no_damaged_file(tmp_path):
    store = MilvusVectorStore(str(tmp_path / "milvus.db"), timeout_s=0.3)
    read, _ = failing(10**6)
    with pytest.raises(BackendError) as failed:
        store._read("sample", read)
    assert "damaged" not in str(failed.value)
    assert str(failed.value) == (
        f"cannot read knowledge base 'sample' from the Milvus Lite file {tmp_path / 'milvus.db'}: its server was "
        "not ready within EXECUTOR_MILVUS_TIMEOUT_S=0.3 s"
    )
