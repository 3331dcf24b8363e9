#!/usr/bin/env bash
# rtt-figures.sh DB... - one line of slotscope's figures per database
# (slotscope analyze CAP --db DB --store-commands): counters, and the client
# connections' requests, paired and unpaired (replication links are counted
# as unpaired requests by the counters, never paired: left out here).
set -euo pipefail
printf '%-22s %7s %8s %8s %7s %5s %5s %6s %5s %5s %4s %7s %8s %s\n' db packets requests paired paired% ureq urep sgaps sg_cl oos rsync midstr findings oriented
for db in "$@"; do
    sqlite3 -separator ' ' "$db" "
      WITH c AS (SELECT name, value FROM counters),
           k AS (SELECT sum(requests) r, sum(requests - unpaired_requests) p, sum(unpaired_requests) ur,
                        sum(unpaired_replies) up FROM connections WHERE kind = 'client')
      SELECT (SELECT value FROM c WHERE name = 'packets'), k.r, k.p,
             printf('%.3f', 100.0 * k.p / k.r), k.ur, k.up,
             (SELECT value FROM c WHERE name = 'start_gaps'),
             (SELECT count(*) FROM connections WHERE kind = 'client' AND gaps > 0),
             (SELECT value FROM c WHERE name = 'out_of_sync_connections'),
             (SELECT value FROM c WHERE name = 'resyncs'),
             (SELECT value FROM c WHERE name = 'mid_stream'),
             (SELECT count(*) FROM findings),
             (SELECT group_concat(side_source || '=' || n, ',') FROM
                (SELECT side_source, count(*) n FROM connections GROUP BY 1))
      FROM k" | { read -r a b c d e f g h i j k l m; printf '%-22s %7s %8s %8s %7s %5s %5s %6s %5s %5s %4s %7s %8s %s\n' "$(basename "$db")" "$a" "$b" "$c" "$d" "$e" "$f" "$g" "$h" "$i" "$j" "$k" "$l" "$m"; }
done
