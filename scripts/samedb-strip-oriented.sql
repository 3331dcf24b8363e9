-- samedb-strip-oriented.sql: take away the counters of what oriented the
-- connections picked up mid-stream (scripts/samedb.sh --strip-new), so that
-- the rest can be compared with a database of before.
DELETE FROM counters WHERE name LIKE 'oriented\_%' ESCAPE '\';
