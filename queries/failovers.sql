-- failovers: which failovers did the cluster bus show, of which kind, and how long did each take?
-- Parameters: none.
-- Usage: slotscope query DB failovers   or   sqlite3 -header -column DB < queries/failovers.sql
-- One row per failover in time order (only captures with cluster-bus traffic
-- have any). kind: manual (MFSTART seen), takeover (epoch bump without an
-- election), automatic (FAIL, then the election). election_ms: from the
-- detection (MFSTART, or the old master's FAIL) to the vote that made the
-- majority; total_ms: from the detection to the new master's first claim.
-- Empty times were not seen.
SELECT kind, old_master, new_master, config_epoch,
       CASE WHEN detected_us > 0
            THEN strftime('%Y-%m-%d %H:%M:%f', detected_us / 1000000.0, 'unixepoch') END
           AS detected_utc,
       CASE WHEN elected_us > 0
            THEN strftime('%Y-%m-%d %H:%M:%f', elected_us / 1000000.0, 'unixepoch') END
           AS elected_utc,
       CASE WHEN done_us > 0
            THEN strftime('%Y-%m-%d %H:%M:%f', done_us / 1000000.0, 'unixepoch') END
           AS done_utc,
       CASE WHEN detected_us > 0 AND elected_us > 0
            THEN round((elected_us - detected_us) / 1000.0, 3) END AS election_ms,
       CASE WHEN detected_us > 0 AND done_us > 0
            THEN round((done_us - detected_us) / 1000.0, 3) END AS total_ms,
       votes, slots, old_id, new_id
  FROM failovers
 ORDER BY ts_us, id;
