-- samedb-strip-io.sql: take away from a database what the input work of
-- issue 18 added (scripts/samedb.sh --strip-new): the inputs columns of
-- compression, time offsets and clock skew, and the schema version they
-- bumped by one, so that the rest can be compared with a database of before.
ALTER TABLE inputs DROP COLUMN compression;
ALTER TABLE inputs DROP COLUMN time_offset_us;
ALTER TABLE inputs DROP COLUMN skew_us;
ALTER TABLE inputs DROP COLUMN skew_shared;
ALTER TABLE inputs DROP COLUMN skew_ref;
UPDATE meta SET value = CAST(value AS INTEGER) - 1 WHERE key = 'schema_version';
