"""The database: engine and sessions, the schema, bulk inserts."""
