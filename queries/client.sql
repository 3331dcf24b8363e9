-- client: what did one client do: its traffic, findings, redirects and connections?
-- Parameter: client, the name as in the clients table ("10.0.0.5", "10.0.0.5:41234" when the run used --client-by conn, "10.0.0.5/worker-a" with --client-by name).
-- Usage: slotscope query DB client --param client=10.0.0.5
--   or   sqlite3 -header -column DB "CREATE TEMP TABLE params (key TEXT PRIMARY KEY, value TEXT)" \
--            "INSERT INTO params VALUES ('client', '10.0.0.5')" ".read queries/client.sql"
-- Four result sets: the client; its findings, worst first; its redirect replies
-- grouped by kind, slot and node; its connections.
CREATE TEMP TABLE IF NOT EXISTS params (key TEXT PRIMARY KEY, value TEXT);

SELECT name AS client, lib_name, lib_ver, client_name, connections, commands, redirects,
       findings, cluster_aware, is_node,
       strftime('%Y-%m-%d %H:%M:%f', first_us / 1000000.0, 'unixepoch') AS first_utc,
       strftime('%Y-%m-%d %H:%M:%f', last_us / 1000000.0, 'unixepoch') AS last_utc
  FROM clients
 WHERE name = (SELECT value FROM params WHERE key = 'client');

SELECT id, kind, severity, node, slot, count,
       round(extra_latency_us / 1000.0, 3) AS extra_ms,
       strftime('%Y-%m-%d %H:%M:%f', first_us / 1000000.0, 'unixepoch') AS first_utc,
       strftime('%Y-%m-%d %H:%M:%f', last_us / 1000000.0, 'unixepoch') AS last_utc,
       summary
  FROM findings
 WHERE client = (SELECT value FROM params WHERE key = 'client')
 ORDER BY severity_level DESC, extra_latency_us DESC, count DESC, id;

SELECT kind, slot, node, target, count(*) AS replies,
       round(avg(latency_us) / 1000.0, 3) AS avg_latency_ms,
       strftime('%Y-%m-%d %H:%M:%f', min(ts_us) / 1000000.0, 'unixepoch') AS first_utc,
       strftime('%Y-%m-%d %H:%M:%f', max(ts_us) / 1000000.0, 'unixepoch') AS last_utc
  FROM redirects
 WHERE client = (SELECT value FROM params WHERE key = 'client')
 GROUP BY kind, slot, node, target
 ORDER BY count(*) DESC, kind, slot, node, target;

SELECT id AS conn, src, dst, commands, bytes_to_server, bytes_to_client, gaps,
       out_of_sync, mid_stream,
       strftime('%Y-%m-%d %H:%M:%f', first_us / 1000000.0, 'unixepoch') AS first_utc,
       strftime('%Y-%m-%d %H:%M:%f', last_us / 1000000.0, 'unixepoch') AS last_utc
  FROM connections
 WHERE client = (SELECT value FROM params WHERE key = 'client')
 ORDER BY first_us, id;
