"""Recording an ingest in the catalog (executor/stores/catalog.py) on a SQLite file of its own."""

import pytest

from executor.core.errors import InputError
from executor.stores.catalog import Catalog
from executor.stores.database import Database


def test_an_ingest_of_a_knowledge_base_dropped_meanwhile_says_so(tmp_path):
    catalog = Catalog(Database(f"sqlite:///{tmp_path / 'app.db'}"))
    catalog.create("ops")
    assert catalog.apply_ingest("ops", [], [], "use-multilingual-v3", 512, str(tmp_path)) == 1
    with pytest.raises(InputError, match="'gone'.*dropped during the ingest"):
        catalog.apply_ingest("gone", [], [], "use-multilingual-v3", 512, str(tmp_path))
