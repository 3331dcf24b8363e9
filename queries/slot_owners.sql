-- slot_owners: who owned which slots when, with which config epoch, and how did each get them?
-- Parameters: none.
-- Usage: slotscope query DB slot_owners   or   sqlite3 -header -column DB < queries/slot_owners.sql
-- Runs of slots with one owner and period, in slot then time order, from the
-- source the report uses: the cluster bus when the capture has any, else what
-- clients were told (CLUSTER SLOTS / SHARDS / NODES replies, MOVED). An empty
-- until_utc: still the owner at the end of the capture.
SELECT slot_lo, slot_hi, node, config_epoch,
       strftime('%Y-%m-%d %H:%M:%f', from_us / 1000000.0, 'unixepoch') AS from_utc,
       CASE WHEN to_us > 0
            THEN strftime('%Y-%m-%d %H:%M:%f', to_us / 1000000.0, 'unixepoch') END AS until_utc,
       cause, source, node_id
  FROM slot_owners
 WHERE source = (SELECT CASE WHEN EXISTS (SELECT 1 FROM slot_owners WHERE source = 'bus')
                             THEN 'bus' ELSE 'clients' END)
 ORDER BY slot_lo, from_us, id;
