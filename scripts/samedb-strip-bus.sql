-- samedb-strip-bus.sql: take away what issue 17's bus pipeline added to a
-- database (schema 3), for scripts/samedb.sh --strip-new against a binary of
-- schema 2: the tables slot_owners, node_states and failovers, the nodes'
-- bus columns, redirects.cause, the bus and cluster counters.
DROP TABLE IF EXISTS slot_owners;
DROP TABLE IF EXISTS node_states;
DROP TABLE IF EXISTS failovers;
ALTER TABLE nodes DROP COLUMN flags;
ALTER TABLE nodes DROP COLUMN master_id;
ALTER TABLE nodes DROP COLUMN config_epoch;
ALTER TABLE nodes DROP COLUMN current_epoch;
ALTER TABLE nodes DROP COLUMN bus_port;
ALTER TABLE nodes DROP COLUMN role_us;
ALTER TABLE nodes DROP COLUMN master_us;
ALTER TABLE nodes DROP COLUMN config_epoch_us;
ALTER TABLE nodes DROP COLUMN flags_us;
ALTER TABLE redirects DROP COLUMN cause;
DELETE FROM counters WHERE name LIKE 'bus\_%' ESCAPE '\'
    OR name IN ('owner_changes', 'failovers', 'dropped_failovers', 'health_changes',
                 'dropped_bus_conns');
UPDATE meta SET value = '2' WHERE key = 'schema_version';
