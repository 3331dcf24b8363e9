-- samedb-strip-timeline.sql: take away what the time series (issue 18) adds to
-- a database, for scripts/samedb.sh --strip-new against a binary without it:
-- the timeline table, its three counters, the schema version it bumped.
DROP TABLE IF EXISTS timeline;
DELETE FROM counters WHERE name IN ('timeline_rows', 'timeline_late', 'timeline_overflow');
UPDATE meta SET value = '4' WHERE key = 'schema_version';
