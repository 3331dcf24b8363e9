#!/usr/bin/python3
"""midcheck.py - slotscope's database for one library's capture against
truth.py's reading of the same capture, command by command.

  scripts/libs/midcheck.py CAPTURE EVENTS.json DB [--name NAME]

DB comes from `slotscope analyze CAPTURE --db DB --store-commands`. truth.py
(its own pcap reader, reassembly and RESP decoder) gives every request with
its reply; slotscope's commands table gives what it paired. Printed, for the
library's address (events.json's libraries_started):
  - truth: requests, redirects by kind, kinds of finding (occurrences, slots),
    connections picked up mid-stream;
  - slotscope: clients.commands, cluster_aware, redirects by kind, findings by
    kind (sum of count, slots), connections (mid_stream, side_source,
    out_of_sync, unpaired requests and replies, resyncs);
  - pairing: each slotscope command with a reply is looked up in truth's list
    of the same connection (client port, node port) by request name, first
    key and request time (truth's time of the packet that completed the
    request, slotscope's ts_us: the same packet); it is paired WRONGLY when
    truth has another reply for it (another reply type or error class, or
    a reply completed at another time). Commands slotscope left unpaired or
    that truth does not have are counted apart; truth_unknown counts those
    whose reply truth cannot tell (server bytes lost where the ACKs do not
    show which requests they answered), whatever slotscope did with them.
    paired_IMPOSSIBLE counts slotscope's pairings whose reply type the
    command cannot get (a plain SET answered by a bulk, a GET by +OK):
    wrong whatever truth says.
"""
import collections, importlib.util, json, os, sqlite3, sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("truth", os.path.join(HERE, "truth.py"))
truth = importlib.util.module_from_spec(spec)
spec.loader.exec_module(truth)


def reply_class(r):
    """(type char, error class) of a truth reply value."""
    if r is None:
        return None
    t = r[0].decode()
    if r[1] is None and t in "$*":
        return ("n", "")          # RESP2 null bulk or array: slotscope's 'n'
    if t == "-" or t == "!":
        v = r[1] if isinstance(r[1], bytes) else b""
        return (t, v.split(b" ")[0].decode(errors="replace") if v else "")
    return (t, "")


# Reply types a command can get from a node (RESP2 and RESP3): a pairing
# outside them is wrong whoever else agrees with it (truth.py pairs without
# ACKs, so a reply lost where nothing shows it shifts both readers alike).
PLAUSIBLE = {"SET": "+-!", "MSET": "+-!", "ASKING": "+-!", "READONLY": "+-!",
             "PING": "+-!$", "GET": "$-!_n", "MGET": "*-!"}  # n: a RESP2 null


def plausible(name, argc, rtype):
    name = (name or "").upper()
    if name == "SET" and (argc or 0) > 3:
        return True   # SET ... GET answers the old value, NX/XX may answer a null
    allowed = PLAUSIBLE.get(name)
    return allowed is None or (rtype or "?") in allowed


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    cap, events_path, dbp = args[:3]
    events = json.load(open(events_path))
    base = events["base"]
    node_ports = set(range(base, base + 20))
    names = {}
    for e in events["events"]:
        if e["what"] == "libraries_started":
            names = {a: n for n, a in e["libs"].items()}
    mid = {}
    cmds = truth.commands(cap, node_ports, mid)
    unknown = truth.infer_readonly(cmds, truth.Roles(events))
    res = truth.judge(cmds, truth.Roles(events))
    db = sqlite3.connect(dbp)
    q = lambda sql, *p: db.execute(sql, p).fetchall()
    for client in sorted(res):
        if client not in names:
            continue      # not a library (redis-cli, MIGRATE, replication)
        r = res[client]
        print("== %s %s" % (client, names.get(client, "-")))
        print("truth: commands %d, mid-stream connections %d (READONLY unknown on %d to replicas),"
              " redirects %s" % (
            r["commands"], mid.get(client, 0), unknown.get(client, 0),
            " ".join("%s=%d" % (k, r["redirects"].get(k, 0)) for k in truth.REDIRECTS)))
        tk = {k: (v[0], ",".join(map(str, sorted(v[1])))) for k, v in r["kinds"].items()}
        print("truth kinds: %s" % ("; ".join("%s n=%d slots=%s" % (k, n, s)
                                              for k, (n, s) in sorted(tk.items())) or "clean"))
        row = q("SELECT commands, cluster_aware, connections FROM clients WHERE name=?", client)
        print("slotscope: commands %s, cluster_aware %s, connections %s" % (
            row[0][0] if row else "-", row[0][1] if row else "-", row[0][2] if row else "-"))
        red = dict(q("SELECT kind, count(*) FROM redirects WHERE client=? GROUP BY kind", client))
        print("slotscope redirects: %s" % " ".join("%s=%d" % (k, red.get(k, 0))
                                                     for k in truth.REDIRECTS))
        sk = {}
        for kind, n, slots in q("SELECT kind, sum(count), group_concat(slot) FROM "
                                "(SELECT kind, count, slot FROM findings WHERE client=? ORDER BY slot) "
                                "GROUP BY kind", client):
            sk[kind] = (n, ",".join(str(s) for s in sorted({int(x) for x in slots.split(",")})))
        print("slotscope kinds: %s" % ("; ".join("%s n=%d slots=%s" % (k, n, s)
                                                  for k, (n, s) in sorted(sk.items())) or "none"))
        verdict = []
        for k in sorted(set(tk) | set(sk)):
            if k not in sk:
                verdict.append("MISSING %s" % k)
            elif k not in tk:
                verdict.append("EXTRA %s" % k)
            elif tk[k] != sk[k]:
                verdict.append("DIFFERS %s (truth %s, slotscope %s)" % (k, tk[k], sk[k]))
        print("findings vs truth: %s" % ("; ".join(verdict) or "same"))
        for row in q("SELECT kind, mid_stream, side_source, count(*), sum(out_of_sync), "
                     "sum(unpaired_requests), sum(unpaired_replies), sum(resyncs), sum(gaps), "
                     "sum(requests), sum(replies) FROM connections WHERE client=? "
                     "GROUP BY kind, mid_stream, side_source", client):
            print("connections kind=%s mid_stream=%d side_source=%s: %d, out_of_sync %d, "
                  "unpaired req %d rep %d, resyncs %d, gaps %d, requests %d, replies %d" % row)
        # pairing, command by command
        conn_of = {cid: (src, dst) for cid, src, dst in
                   q("SELECT id, src, dst FROM connections")}
        by_conn = collections.defaultdict(lambda: collections.defaultdict(list))
        n_truth = 0
        for c in cmds:
            if c["client"] == client:
                by_conn[(c["cport"], c["node"])][int(round(c["t"] * 1e6))].append(c)
                n_truth += 1
        used = set()
        stats = collections.Counter()
        wrong = []
        for cid, ts, rts, name, key, outcome, rtype, err, argc in q(
                "SELECT conn, ts_us, reply_us, name, key, outcome, reply_type, error, argc "
                "FROM commands WHERE client=? ORDER BY conn, seq", client):
            if outcome == "ok" and not plausible(name, argc, rtype):
                stats["paired_IMPOSSIBLE"] += 1   # whatever truth says: see plausible
            src, dst = conn_of.get(cid, ("", ""))
            cport, node = int(src.rsplit(":", 1)[1]), int(dst.rsplit(":", 1)[1])
            at = by_conn.get((cport, node), {})
            cand = [c for d in (-1, 0, 1) for c in at.get(ts + d, ())
                    if id(c) not in used and c["name"].decode(errors="replace").upper() == name.upper()
                    and (not key or (len(c["argv"]) > 1 and c["argv"][1].decode(errors="replace") == key))]
            if not cand:
                stats["not_in_truth"] += 1
                continue
            t = cand[0]
            used.add(id(t))
            if t.get("unknown"):
                stats["truth_unknown"] += 1   # truth cannot tell its reply: lost bytes
            if outcome != "ok":
                stats["slotscope_" + outcome] += 1
                if t["reply"] is not None:
                    stats["unpaired_but_truth_has_reply"] += 1
                continue
            tc = reply_class(t["reply"])
            if tc is None:
                if not t.get("unknown"):
                    stats["truth_has_no_reply"] += 1
                continue
            same_t = abs(int(round(t["t_reply"] * 1e6)) - rts) <= 1
            same_c = tc[0] == (rtype or "?") and (tc[0] not in "-!" or tc[1] == err)
            if same_t and same_c:
                stats["paired_same"] += 1
            else:
                stats["paired_WRONG"] += 1
                if len(wrong) < 5:
                    wrong.append("%s:%d->%d %s %s at %.6f: slotscope %s%s at %d, truth %s%s at %.6f" % (
                        client, cport, node, name, key, t["t"], rtype, err, rts, tc[0], tc[1],
                        t["t_reply"]))
        stats["truth_commands_not_matched"] = n_truth - len(used)
        print("pairing: %s" % " ".join("%s=%d" % kv for kv in sorted(stats.items())))
        for w in wrong:
            print("  WRONG %s" % w)


if __name__ == "__main__":
    main()
