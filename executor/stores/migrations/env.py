"""Alembic environment: migrations run on the connection the app hands over (executor/stores/database.py)."""

from alembic import context

from executor.stores.database import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
