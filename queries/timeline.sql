-- timeline: per time bucket, the redirects by kind, ASKING, retries, operations and their p50/p99: when did the reshard hurt, and whom?
-- Parameters (both optional): scope, one of cluster (the default), node, client, slots; id, one scope_id of it (a node address, a client name, a slot range such as 5000-5099, or other).
-- Usage: slotscope query DB timeline [--param scope=client] [--param id=10.0.0.5] [--json]
--   or   sqlite3 -header -column DB < queries/timeline.sql
-- One row per bucket and scope in time order, the scopes of a bucket with the
-- most redirects first. The rows are the timeline table's (see store/schema.sql:
-- per bucket only the top scopes by redirects have rows of their own, the rest
-- are summed as 'other'); bucket_utc is bucket_us as text. Latencies are NULL
-- in a bucket where no such operation ended.
CREATE TEMP TABLE IF NOT EXISTS params (key TEXT PRIMARY KEY, value TEXT);

SELECT strftime('%Y-%m-%d %H:%M:%f', bucket_us / 1000000.0, 'unixepoch') AS bucket_utc,
       bucket_us, width_us, scope, scope_id, scopes, commands, moved, ask, tryagain,
       crossslot, clusterdown, asking, retries, direct_ops, redirected_ops, direct_p50_us,
       direct_p99_us, redirected_p50_us, redirected_p99_us
  FROM timeline
 WHERE scope = coalesce((SELECT value FROM params WHERE key = 'scope'), 'cluster')
   AND ((SELECT value FROM params WHERE key = 'id') IS NULL
        OR scope_id = (SELECT value FROM params WHERE key = 'id'))
 ORDER BY bucket_us, moved + ask + tryagain + crossslot + clusterdown DESC, scope_id, rowid;
