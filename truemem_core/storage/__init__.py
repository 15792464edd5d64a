"""The database: URLs, engine and transactions, tables, migrations, the jobs outbox."""
