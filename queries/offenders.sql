-- offenders: which clients mishandled redirects, ranked by the time it cost them?
-- Parameters: none.
-- Usage: slotscope query DB offenders   or   sqlite3 -header -column DB < queries/offenders.sql
-- One row per client with findings (cluster-side findings such as migration_stuck
-- have no client and are left out): the worst severity, the kinds of mishandling,
-- how often, the extra latency it cost in all, and the client's traffic.
SELECT f.client,
       CASE max(f.severity_level) WHEN 3 THEN 'error' WHEN 2 THEN 'warning' ELSE 'info' END
           AS severity,
       count(*) AS findings,
       (SELECT group_concat(kind, ',')
          FROM (SELECT DISTINCT kind FROM findings k WHERE k.client = f.client ORDER BY kind))
           AS kinds,
       sum(f.count) AS occurrences,
       round(sum(f.extra_latency_us) / 1000.0, 3) AS extra_ms,
       coalesce(c.commands, 0) AS commands,
       coalesce(c.redirects, 0) AS redirects,
       coalesce(c.cluster_aware, 0) AS cluster_aware
  FROM findings f
  LEFT JOIN clients c ON c.name = f.client
 WHERE f.client <> ''
 GROUP BY f.client
 ORDER BY sum(f.extra_latency_us) DESC, max(f.severity_level) DESC, sum(f.count) DESC, f.client;
