-- latency_by_slot: for each slot, what did redirected operations cost compared with direct ones?
-- Parameters: none.
-- Usage: slotscope query DB latency_by_slot   or   sqlite3 -header -column DB < queries/latency_by_slot.sql
-- An operation is one command with its redirects and retries, first attempt to
-- final reply. Slots with redirected operations come first, the most extra time
-- first; redirect_replies counts the MOVED/ASK/TRYAGAIN/... replies for the slot.
SELECT CAST(l.key AS INTEGER) AS slot,
       sum(CASE WHEN l.redirected = 0 THEN l.count END) AS direct_ops,
       round(max(CASE WHEN l.redirected = 0 THEN l.p50_us END) / 1000.0, 3) AS direct_p50_ms,
       round(max(CASE WHEN l.redirected = 0 THEN l.p99_us END) / 1000.0, 3) AS direct_p99_ms,
       sum(CASE WHEN l.redirected = 1 THEN l.count END) AS redirected_ops,
       round(max(CASE WHEN l.redirected = 1 THEN l.p50_us END) / 1000.0, 3) AS redirected_p50_ms,
       round(max(CASE WHEN l.redirected = 1 THEN l.p99_us END) / 1000.0, 3) AS redirected_p99_ms,
       round(coalesce(sum(CASE WHEN l.redirected = 1 THEN l.extra_us END), 0) / 1000.0, 3)
           AS extra_ms,
       coalesce(sum(CASE WHEN l.redirected = 1 THEN l.extra_round_trips END), 0)
           AS extra_round_trips,
       (SELECT count(*) FROM redirects r WHERE r.slot = CAST(l.key AS INTEGER))
           AS redirect_replies
  FROM latency l
 WHERE l.scope = 'slot'
 GROUP BY l.key
 ORDER BY extra_ms DESC, redirected_ops DESC, slot;
