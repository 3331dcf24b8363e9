-- slotscope database indexes, for the canned queries (queries/*.sql) and the
-- report. Compiled in (store_indexes_sql) and run by store_open or store_close.
--
-- When they are built (store_opts.index_at_close, store.c):
-- - live (a run one may query while it writes): with the tables, kept up to
--   date row by row;
-- - analyze (capture files): once by store_close, after the last row: keeping
--   them up to date row by row costs more than the inserts themselves, and
--   building them at close a fraction of that. A run that reaches
--   store_close (the end, or a stop by
--   SIGINT/SIGTERM, which analyze and live both finish properly) has them;
--   the database of a run killed before (SIGKILL, a second Ctrl-C, a crash,
--   power loss) holds its committed rows but no index: queries still give
--   the same answers, only slower.
-- "IF NOT EXISTS" because store_close runs this text in both cases.
CREATE INDEX IF NOT EXISTS redirects_client ON redirects (client, ts_us);
CREATE INDEX IF NOT EXISTS redirects_slot ON redirects (slot, ts_us);
CREATE INDEX IF NOT EXISTS redirects_ts ON redirects (ts_us);
CREATE INDEX IF NOT EXISTS findings_client ON findings (client);
CREATE INDEX IF NOT EXISTS findings_kind ON findings (kind);
CREATE INDEX IF NOT EXISTS connections_client ON connections (client);
CREATE INDEX IF NOT EXISTS slot_migrations_slot ON slot_migrations (slot);
-- The commands table's indexes, commands_client (client, ts_us) and
-- commands_conn (conn, seq), are built by store_close in both modes
-- (close_indexes_sql in store.c): building them once at the end costs a
-- fraction of keeping them up to date row by row (2x the insert time on a
-- million commands).
