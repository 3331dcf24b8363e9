#!/usr/bin/env python3
"""loss-compare.py - compare a lossy run's pairing with the clean run's.

    bench/loss-compare.py CLEAN.txt LOSSY.txt DROPPED.txt [--json]

CLEAN.txt and LOSSY.txt are bench/pair_dump's output on a clean capture and
on the same capture with packets dropped (bench/loss-inject.py, whose
--dropped list is DROPPED.txt). A command is known in both runs by its
connection (client, server) and the stream position after its request
(requests whose bytes were lost are not decoded in the lossy run); its reply
by the stream position after the reply. Prints:

  wrong      commands paired in the lossy run with a different reply than in
             the clean run (or paired there and not in the clean run): must
             be 0. Those on connections the clean run paired nothing on (a
             stream nobody answers, e.g. a replication link taken for a
             client's) are counted apart: junk in either run
  eligible   commands paired in the clean run whose request-completing and
             reply-completing packets both survived
  paired     of those, how many the lossy run paired (and the share)
"""
import bisect
import json
import sys


def load(path):
    cmds = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) < 6:
                continue
            cmds[(p[0], p[1], int(p[2]))] = (p[3], int(p[4]), p[5])
    return cmds


def load_dropped(path):
    """(src, dst) -> sorted list of (start, end) ranges dropped."""
    d = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 4:
                d.setdefault((p[0], p[1]), []).append((int(p[2]), int(p[3])))
    for v in d.values():
        v.sort()
    return d


def lost(dropped, key, pos):
    """Was byte pos of the stream key in a dropped segment?"""
    v = dropped.get(key)
    if not v:
        return False
    i = bisect.bisect_right(v, (pos, float("inf"))) - 1
    return i >= 0 and v[i][0] <= pos < v[i][1]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 3:
        sys.exit(__doc__)
    clean, lossy, dropped = load(args[0]), load(args[1]), load_dropped(args[2])
    wrong = wrong_dead = eligible = paired = 0
    examples = []
    # connections on which the clean run paired nothing (a stream nobody
    # answers, such as a replication link read as a client's): a "pairing"
    # there is junk in either run, counted apart
    live = {(k[0], k[1]) for k, v in clean.items() if v[0] == "ok"}
    for key, (outcome, reply_end, name) in lossy.items():
        if outcome != "ok":
            continue
        ref = clean.get(key)
        if ref is None or ref[0] != "ok" or ref[1] != reply_end:
            if (key[0], key[1]) not in live:
                wrong_dead += 1
                continue
            wrong += 1
            if len(examples) < 5:
                examples.append((key, lossy[key], ref))
    for key, (outcome, reply_end, name) in clean.items():
        if outcome != "ok":
            continue
        client, server, req_end = key
        if lost(dropped, (client, server), req_end - 1) or \
                lost(dropped, (server, client), reply_end - 1):
            continue
        eligible += 1
        got = lossy.get(key)
        if got is not None and got[0] == "ok" and got[1] == reply_end:
            paired += 1
    share = paired / eligible if eligible else 1.0
    res = {"commands_clean": len(clean), "commands_lossy": len(lossy), "wrong": wrong,
           "wrong_unpaired_conns": wrong_dead, "eligible": eligible, "paired": paired,
           "share": round(share, 5)}
    if "--json" in sys.argv:
        print(json.dumps(res))
    else:
        print("wrong %d (+%d on connections the clean run paired nothing on); eligible %d; "
              "paired %d (%.2f%%); commands clean %d, lossy %d" %
              (wrong, wrong_dead, eligible, paired, 100 * share, len(clean), len(lossy)))
    for e in examples:
        print("  wrong:", e, file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
