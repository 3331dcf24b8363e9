-- offenders: which clients mishandled redirects, ranked by the time it cost them?
-- Parameters: none.
-- Usage: slotscope query DB offenders   or   sqlite3 -header -column DB < queries/offenders.sql
-- One row per client with findings (cluster-side findings such as migration_stuck
-- have no client and are left out): the worst severity, the kinds of mishandling,
-- how often, what the redirects cost the client, and the client's traffic.
--
-- Costs are counted per operation (a command with its redirects and retries),
-- and findings overlap: one operation can be covered by several findings (a
-- client without ASKING bouncing S -ASK-> T -MOVED-> S is in both
-- asking_missing and redirect_loop), each charged the whole operation
-- (docs/findings.md, "Cost"). So the sum of a client's findings counts such an
-- operation twice. The columns:
--   redirect_extra_ms  the extra time of the client's redirected operations
--                      that ended, each counted once (latency table: scope
--                      'client', redirected = 1, extra_us; 0 without a row).
--                      Operations that never ended (the client gave up or
--                      never followed) are not in that table.
--   findings_extra_ms  the sum of the findings' extra_latency_us: an operation
--                      counts once per finding that covers it (it can exceed
--                      the real cost; do not add it to anything).
--   cost_ms            what clients are ranked by after their worst
--                      severity (the text report's order of findings:
--                      severity, then cost, then occurrences): the larger of
--                      redirect_extra_ms and the costliest single finding.
--                      Neither counts an operation twice, and the finding
--                      also sees operations that never ended, so it is a lower
--                      bound of the client's redirect cost.
SELECT f.client,
       CASE max(f.severity_level) WHEN 3 THEN 'error' WHEN 2 THEN 'warning' ELSE 'info' END
           AS severity,
       count(*) AS findings,
       (SELECT group_concat(kind, ',')
          FROM (SELECT DISTINCT kind FROM findings k WHERE k.client = f.client ORDER BY kind))
           AS kinds,
       sum(f.count) AS occurrences,
       round(max(coalesce(l.extra_us, 0), max(f.extra_latency_us)) / 1000.0, 3) AS cost_ms,
       round(coalesce(l.extra_us, 0) / 1000.0, 3) AS redirect_extra_ms,
       round(sum(f.extra_latency_us) / 1000.0, 3) AS findings_extra_ms,
       coalesce(c.commands, 0) AS commands,
       coalesce(c.redirects, 0) AS redirects,
       coalesce(c.cluster_aware, 0) AS cluster_aware
  FROM findings f
  LEFT JOIN clients c ON c.name = f.client
  LEFT JOIN latency l ON l.scope = 'client' AND l.key = f.client AND l.redirected = 1
 WHERE f.client <> ''
 GROUP BY f.client
 ORDER BY max(f.severity_level) DESC, max(coalesce(l.extra_us, 0), max(f.extra_latency_us)) DESC,
          sum(f.count) DESC, f.client;
