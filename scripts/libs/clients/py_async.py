#!/usr/bin/python3
"""py_async.py PLAN.json - the scenario workload with python3-redis's asyncio
RedisCluster (read_from_replicas=True); each step's five commands are issued
concurrently (asyncio.gather), as an asyncio application would."""
import asyncio, json, os, sys, time
import redis
from redis.asyncio.cluster import RedisCluster, ClusterNode

plan = json.load(open(sys.argv[1]))
summary = {"lib": "redis-py asyncio", "version": redis.__version__, "ok": 0, "errors": {}}

async def step(rc, i):
    x, y = plan["pairs"][i % len(plan["pairs"])]
    f = plan["fail"][i % len(plan["fail"])]
    a, b = plan["hot"][i % len(plan["hot"])]
    res = await asyncio.gather(rc.mset({x: i, y: i}), rc.get(x),
                               rc.get(f) if i % 2 else rc.set(f, i),
                               rc.mget(a, b), rc.set(a, i), return_exceptions=True)
    for r in res:
        if isinstance(r, Exception):
            k = type(r).__name__ + ":" + str(r).split(" ")[0][:40]
            summary["errors"][k] = summary["errors"].get(k, 0) + 1
        else:
            summary["ok"] += 1

async def main():
    rc = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in plan["seeds"]],
                      read_from_replicas=True, socket_timeout=2)
    await rc.initialize()
    deadline = time.time() + plan["duration"]
    i = 0
    while time.time() < deadline and not os.path.exists(plan["stop"]):
        await step(rc, i); i += 1
        await asyncio.sleep(plan["interval"])
    await rc.close()
    summary["steps"] = i

asyncio.run(main())
print(json.dumps(summary))
