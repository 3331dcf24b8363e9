#!/usr/bin/python3
"""py_sync.py PLAN.json - the scenario workload with python3-redis's sync
RedisCluster (read_from_replicas=True). See scripts/libs/scenario.py for the
plan and the loop (each step: MSET pair, GET x, GET/SET fail key, MGET hot
pair, SET hot a); the summary (ok and errors by class) goes to stdout."""
import json, os, sys, time
import redis
from redis.cluster import RedisCluster, ClusterNode

plan = json.load(open(sys.argv[1]))
summary = {"lib": "redis-py", "version": redis.__version__, "ok": 0, "errors": {}}

def note(e):
    k = type(e).__name__ + ":" + str(e).split(" ")[0][:40]
    summary["errors"][k] = summary["errors"].get(k, 0) + 1

def step(rc, i):
    x, y = plan["pairs"][i % len(plan["pairs"])]
    f = plan["fail"][i % len(plan["fail"])]
    a, b = plan["hot"][i % len(plan["hot"])]
    calls = [lambda: rc.mset({x: i, y: i}), lambda: rc.get(x),
             (lambda: rc.get(f)) if i % 2 else (lambda: rc.set(f, i)),
             lambda: rc.mget(a, b), lambda: rc.set(a, i)]
    for c in calls:
        try:
            c(); summary["ok"] += 1
        except Exception as e:  # noqa: BLE001 - every error is counted
            note(e)

rc = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in plan["seeds"]],
                  read_from_replicas=True, socket_timeout=2)
deadline = time.time() + plan["duration"]
i = 0
while time.time() < deadline and not os.path.exists(plan["stop"]):
    step(rc, i); i += 1
    time.sleep(plan["interval"])
rc.close()
summary["steps"] = i
print(json.dumps(summary))
