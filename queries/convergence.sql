-- convergence: after each slot ownership change, how long did each client keep sending those slots to the old owner?
-- Parameters: none.
-- Usage: slotscope query DB convergence   or   sqlite3 -header -column DB < queries/convergence.sql
-- One row per (client, change), the slowest first. stale_ms is the client's
-- last command to the old owner minus the flip (empty: it sent none there);
-- moved_ms its first command to the new owner minus the flip. source: bus
-- (the nodes' own claims) or clients (what clients were told, when the
-- capture has no bus). at_risk_writes: writes the old owner acknowledged
-- after the flip (see the writes_at_risk finding and the at_risk_writes table).
SELECT client, slot_lo, slot_hi, old_node, new_node, source,
       strftime('%Y-%m-%d %H:%M:%f', flip_us / 1000000.0, 'unixepoch') AS flip_utc,
       CASE WHEN last_stale_us > 0 THEN round((last_stale_us - flip_us) / 1000.0, 3) END
           AS stale_ms,
       CASE WHEN converged_us > 0 THEN round((converged_us - flip_us) / 1000.0, 3) END
           AS moved_ms,
       stale_commands, moved_replies, at_risk_writes
  FROM convergence
 ORDER BY coalesce(last_stale_us - flip_us, 0) DESC, flip_us, client, id;
