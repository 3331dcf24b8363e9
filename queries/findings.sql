-- findings: which kinds of redirect mishandling happened, how often, and what did they cost?
-- Parameters: none.
-- Usage: slotscope query DB findings   or   sqlite3 -header -column DB < queries/findings.sql
-- One row per finding kind (names as in DESIGN.md), worst first; then every
-- finding, ranked by impact, with its one-line summary (evidence: the findings
-- table's evidence column, a JSON object).
SELECT kind,
       CASE max(severity_level) WHEN 3 THEN 'error' WHEN 2 THEN 'warning' ELSE 'info' END
           AS severity,
       count(*) AS findings,
       count(DISTINCT nullif(client, '')) AS clients,
       sum(count) AS occurrences,
       round(sum(extra_latency_us) / 1000.0, 3) AS extra_ms,
       strftime('%Y-%m-%d %H:%M:%f', min(first_us) / 1000000.0, 'unixepoch') AS first_utc,
       strftime('%Y-%m-%d %H:%M:%f', max(last_us) / 1000000.0, 'unixepoch') AS last_utc
  FROM findings
 GROUP BY kind
 ORDER BY max(severity_level) DESC, sum(extra_latency_us) DESC, sum(count) DESC, kind;

SELECT id, kind, severity, client, node, slot, count,
       round(extra_latency_us / 1000.0, 3) AS extra_ms,
       strftime('%Y-%m-%d %H:%M:%f', first_us / 1000000.0, 'unixepoch') AS first_utc,
       summary
  FROM findings
 ORDER BY severity_level DESC, extra_latency_us DESC, count DESC, id;
