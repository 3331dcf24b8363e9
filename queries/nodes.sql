-- nodes: how much traffic did each node serve, and how many redirects did it send?
-- Parameters: none.
-- Usage: slotscope query DB nodes   or   sqlite3 -header -column DB < queries/nodes.sql
-- One row per server endpoint seen in the capture or learned from the cluster's
-- own replies, the busiest first: its role and announced address (when
-- learned), connections, clients, commands and bytes, the redirect replies it
-- sent by kind, and the latency of direct operations it answered.
WITH addrs (node) AS (
    SELECT observed FROM nodes WHERE observed <> ''
    UNION SELECT dst FROM connections
    UNION SELECT node FROM redirects WHERE node <> ''
)
SELECT a.node,
       coalesce(n.role, '') AS role,
       coalesce(n.announced, '') AS announced,
       coalesce(n.slots_owned, 0) AS slots_owned,
       (SELECT count(*) FROM connections c WHERE c.dst = a.node) AS connections,
       (SELECT count(DISTINCT client) FROM connections c WHERE c.dst = a.node) AS clients,
       coalesce((SELECT sum(commands) FROM connections c WHERE c.dst = a.node), 0) AS commands,
       coalesce((SELECT sum(bytes_to_server) FROM connections c WHERE c.dst = a.node), 0)
           AS bytes_in,
       coalesce((SELECT sum(bytes_to_client) FROM connections c WHERE c.dst = a.node), 0)
           AS bytes_out,
       (SELECT count(*) FROM redirects r WHERE r.node = a.node AND r.kind = 'MOVED') AS moved,
       (SELECT count(*) FROM redirects r WHERE r.node = a.node AND r.kind = 'ASK') AS ask,
       (SELECT count(*) FROM redirects r WHERE r.node = a.node AND r.kind = 'TRYAGAIN')
           AS tryagain,
       (SELECT round(p50_us / 1000.0, 3) FROM latency l
         WHERE l.scope = 'node' AND l.key = a.node AND l.redirected = 0) AS direct_p50_ms,
       (SELECT round(p99_us / 1000.0, 3) FROM latency l
         WHERE l.scope = 'node' AND l.key = a.node AND l.redirected = 0) AS direct_p99_ms
  FROM addrs a
  LEFT JOIN nodes n ON n.observed = a.node
 ORDER BY commands DESC, connections DESC, a.node;
