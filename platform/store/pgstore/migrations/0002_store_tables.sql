-- The declared tables (store.Declare): each bucket declared as a table is
-- a table of its own, with typed columns for its fields and its indexes.
-- This catalog keeps each one's declaration (compared at every start to
-- migrate it) and the DDL generated from it, for operators.
CREATE TABLE store_tables (
    name        text COLLATE "C" PRIMARY KEY,
    fingerprint text NOT NULL,
    declaration jsonb NOT NULL,
    ddl         text NOT NULL,
    migrated_at timestamptz NOT NULL DEFAULT now()
);
