-- health: what could the capture not see (gaps, drops, truncation, connections out of sync)?
-- Parameters: none.
-- Usage: slotscope query DB health   or   sqlite3 -header -column DB < queries/health.sql
-- Three result sets: the counters of everything lost or guessed (non-zero
-- ones); each input with its drops and read error; the connections that lost
-- bytes, were picked up mid-stream or fell out of sync, the worst first.
SELECT name, value
  FROM counters
 WHERE value <> 0
   AND name IN ('gaps', 'gap_bytes', 'truncated', 'malformed', 'kernel_drops', 'if_drops',
                'mid_stream', 'out_of_sync_connections', 'unpaired_requests',
                'unpaired_replies', 'resyncs', 'skipped_bytes', 'protocol_errors',
                'unknown_commands', 'evicted_connections', 'evicted_clients', 'evicted_ops',
                'ooo_dropped', 'out_of_window', 'overlap_conflicts', 'time_backwards',
                'dropped_requests', 'limit_hits', 'ip_fragments', 'unsupported',
                'evicted_conns', 'evicted_memos', 'dropped_findings', 'view_drops',
                'latency_slots_dropped', 'map_errors')
 ORDER BY name;

SELECT name, linktype_name, packets, bytes, kernel_drops, if_drops, time_backwards, error,
       strftime('%Y-%m-%d %H:%M:%f', first_us / 1000000.0, 'unixepoch') AS first_utc,
       strftime('%Y-%m-%d %H:%M:%f', last_us / 1000000.0, 'unixepoch') AS last_utc
  FROM inputs
 ORDER BY id;

SELECT id AS conn, client, src, dst, gaps, gap_bytes, out_of_sync, mid_stream, resyncs,
       skipped_bytes, unpaired_requests, unpaired_replies, protocol_errors
  FROM connections
 WHERE gaps > 0 OR out_of_sync <> 0 OR mid_stream <> 0 OR unpaired_requests > 0
    OR unpaired_replies > 0 OR protocol_errors > 0
 ORDER BY gap_bytes DESC, out_of_sync DESC, gaps DESC, id;
