#!/usr/bin/python3
"""scenario.py - capture real Redis Cluster client libraries through a live
reshard, a hand migration with a long ASK window, a manual failover and a
rebalance, for slotscope's real-library fixtures (tests/fixtures/libs/).

  scripts/libs/scenario.py [--base 31300] [--work /work/captures/libs]
                           [--midstream] [--any] [--load] [--buffer KIB]
                           [--delay-us D [--delay-all]]

Needs root (tcpdump on lo), redis-server/redis-cli 7, tcpdump, gcc, and the
libraries: Debian's php-redis, ruby-redis, python3-redis (/usr/bin/python3),
and the npm packages of scripts/libs/package.json installed with
`npm install --prefix WORK` (WORK/node_modules; never inside the repository).

What it does, every step bounded in time:
  1. cluster.sh starts 3 masters + 3 replicas on BASE..BASE+5 (bus +10000).
  2. Keys are planned from the slot map (CRC16 here): 32 "reshard" slots (the
     first 32 of the master owning slot 0, which redis-cli --cluster reshard
     moves first), filled with 1000 filler keys each so that each slot's move
     takes a while; one "hot" slot of the second master for the hand migration;
     4 "fail" slots of the third master, whose replica is promoted.
  3. Two tcpdumps on lo: WORK/full.pcap (node ports BASE..BASE+19: clients,
     replication, MIGRATE, redis-cli) and WORK/full-bus.pcap (the same plus the
     cluster bus ports).
  4. Eight library processes, each from its own 127.0.0.x (bindshim.so), loop
     until told to stop, one step every INTERVAL_S: MSET of a hash-tagged pair
     in a reshard slot, GET of one of them (a read: replicas allowed), GET or
     SET of a fail key, MGET of a hot pair ({hot}...:aN and :bN), SET of that
     hot aN (values: the step number).
  5. Phases: redis-cli --cluster reshard of the 32 slots; a hand migration of
     the hot slot where the :aN keys move first and the :bN keys only after an
     ASK window of ASK_WINDOW_S seconds (MGET a b then gets TRYAGAIN); CLUSTER
     FAILOVER on the third master's replica; redis-cli --cluster rebalance
     (which moves the 32 slots back). events.json records each phase's times
     and the node roles before and after the failover.
  6. The libraries stop, tcpdump stops, the cluster stops; each library's
     traffic is cut out of full.pcap by source address into WORK/NAME.pcap.

Options (without them the run is the one above, unchanged):
  --midstream  tcpdump starts only once every library has a connection to each
               of the three masters (CLIENT LIST) and MIDSTREAM_WARMUP_S more
               seconds of steps: those connections and the replication links
               predate the capture (no SYN in it), as when a user starts
               tcpdump on a running system. Step 3 then comes after step 4.
  --any        tcpdump -i any (Linux cooked capture, SLL2) instead of -i lo.
  --load       background redis-benchmark --cluster traffic (LOAD_ARGS, bursts
               of LOAD_REQUESTS requests LOAD_PAUSE_S apart) from LOAD_ADDR,
               started with the libraries and stopped with them, for volume.
  --buffer KIB tcpdump -B KIB (a small buffer gives kernel drops under --load).
  --delay-us D the libraries are D microseconds from the nodes (RTT 2D), seen
               from the nodes' host: scripts/rtt/delay-on.sh (NFQUEUE rules on
               the data ports BASE..BASE+5 and two netdelay processes; client->
               node packets delayed before the tap, node->client after it),
               set up right after the cluster starts, before any library
               connects, and removed by delay-off.sh whatever happens (also on
               an error, Ctrl-C or SIGTERM); its counters go to
               WORK/netdelay.log. Only the libraries' connections (and
               --load's) are delayed: redis-cli (reshard, rebalance, CLIENT
               LIST), MIGRATE between nodes and the replication links are
               not, as for tools run on the nodes' host; delayed, the reshard's
               6400 MIGRATE batches (3 round trips each) would take ~6 min at
               D=10000, past its 180 s limit. The cluster bus is never
               delayed: node-to-node gossip is no client traffic, and slowing
               it would only stretch the failover.
  --delay-all  with --delay-us: delay every connection to a data port, as
               scripts/rtt/rtt-capture.sh does (redis-cli and MIGRATE too).
"""
import argparse, json, os, shutil, signal, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLUSTER_SH = os.path.join(ROOT, "scripts", "cluster", "cluster.sh")
DELAY_ON = os.path.join(ROOT, "scripts", "rtt", "delay-on.sh")
DELAY_OFF = os.path.join(ROOT, "scripts", "rtt", "delay-off.sh")
ASK_WINDOW_S = 6.0
INTERVAL_S = 0.5          # pause between a library's steps
RESHARD_SLOTS = 32
FILLER_PER_SLOT = 1000
# A library's identical commands recur only after more than slotscope's
# op_window (5 s): the 32 pairs every 16 s, the fail keys every 12 s, the
# hot pairs every 6 s. A repeat of a command within 5 s is then always the
# library's own retry, never the application's next step.
FAIL_VARIANTS = 6
HOT_PAIRS = 12
MIDSTREAM_WARMUP_S = 4.0  # --midstream: steps after every library is connected
LOAD_ADDR = "127.0.0.40"  # --load: redis-benchmark's source address
LOAD_ARGS = ["--cluster", "-P", "16", "-c", "50", "-d", "64", "-t", "set,get", "-r", "100000", "-q"]
LOAD_REQUESTS = 20000     # per redis-benchmark run (each of set, get)
LOAD_PAUSE_S = 1.0        # between runs

# name, source address, command (PLAN replaced by the plan file)
LIBS = [
    ("php-redis", "127.0.0.21", ["php", "{clients}/php_cluster.php", "PLAN"]),
    ("ruby-redis", "127.0.0.22", ["ruby", "{clients}/ruby_cluster.rb", "PLAN"]),
    ("redis-py", "127.0.0.23", ["/usr/bin/python3", "{clients}/py_sync.py", "PLAN"]),
    ("redis-py-asyncio", "127.0.0.24", ["/usr/bin/python3", "{clients}/py_async.py", "PLAN"]),
    ("node-redis", "127.0.0.25", ["node", "{clients}/node_client.js", "node-redis", "PLAN"]),
    ("ioredis", "127.0.0.26", ["node", "{clients}/node_client.js", "ioredis", "PLAN"]),
    ("iovalkey", "127.0.0.27", ["node", "{clients}/node_client.js", "iovalkey", "PLAN"]),
    ("valkey-glide", "127.0.0.28", ["node", "{clients}/node_client.js", "glide", "PLAN"]),
]


def crc16(data):
    """CRC16-CCITT (XMODEM), as Redis Cluster hashes keys."""
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def key_slot(key):
    k = key.encode()
    s = k.find(b"{")
    if s >= 0:
        e = k.find(b"}", s + 1)
        if e > s + 1:
            k = k[s + 1:e]
    return crc16(k) % 16384


def tag_for(slot, prefix):
    """A hash tag {prefixN} whose slot is SLOT (bounded search)."""
    for n in range(2000000):
        t = "%s%d" % (prefix, n)
        if key_slot("{%s}" % t) == slot:
            return t
    raise RuntimeError("no tag for slot %d" % slot)


def log(msg):
    print("%.3f scenario: %s" % (time.time(), msg), flush=True)


def cli(port, *args, check=True):
    r = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port)] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=60)
    if check and r.returncode != 0:
        raise RuntimeError("redis-cli %s: %s" % (args, r.stderr))
    return r.stdout


def cluster_sh(*args, timeout=120):
    r = subprocess.run(["bash", CLUSTER_SH] + [str(a) for a in args], capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("cluster.sh %s: %s" % (args, r.stderr))
    return r.stdout.strip()


def topology(port):
    """{master_port: {"id":..., "slots": [(lo, hi)], "replicas": [port]}} from CLUSTER NODES."""
    nodes = {}
    for line in cli(port, "CLUSTER", "NODES").splitlines():
        f = line.split()
        if len(f) < 8:
            continue
        p = int(f[1].split("@")[0].split(":")[1])
        nodes[f[0]] = {"port": p, "master": "master" in f[2], "of": f[3], "slots": f[8:]}
    out = {}
    for nid, n in nodes.items():
        if n["master"]:
            ranges = []
            for s in n["slots"]:
                if s.startswith("["):
                    continue
                lo, _, hi = s.partition("-")
                ranges.append((int(lo), int(hi or lo)))
            out[n["port"]] = {"id": nid, "slots": sorted(ranges), "replicas": []}
    for nid, n in nodes.items():
        if not n["master"] and n["of"] in nodes:
            out[nodes[n["of"]]["port"]]["replicas"].append(n["port"])
    return out


def owner_of(topo, slot):
    for p, m in topo.items():
        if any(lo <= slot <= hi for lo, hi in m["slots"]):
            return p
    raise RuntimeError("slot %d has no owner" % slot)


def roles(topo):
    return {"masters": sorted(topo), "replicas": {str(p): m["replicas"] for p, m in topo.items()}}


class Run:
    def __init__(self, base, work, iface="lo", buffer_kib=None):
        self.base, self.work = base, work
        self.iface, self.buffer_kib = iface, buffer_kib
        self.load = None
        self.cdir = os.path.join(work, "cluster")
        self.procs, self.dumps, self.events = {}, [], []
        self.stop_file = os.path.join(work, "stop")

    def event(self, what, **kw):
        kw.update(what=what, ts=time.time())
        self.events.append(kw)
        log(what + " " + json.dumps({k: v for k, v in kw.items() if k not in ("what", "ts")}))

    def start_cluster(self):
        cluster_sh("stop", self.cdir)
        shutil.rmtree(self.cdir, ignore_errors=True)
        cluster_sh("start", 3, 1, self.base, self.cdir, timeout=180)
        self.topo = topology(self.base)
        log("topology " + json.dumps(self.topo))

    def plan_keys(self):
        t = self.topo
        m0, m1, m2 = owner_of(t, 0), owner_of(t, 8000), owner_of(t, 16000)
        self.m = (m0, m1, m2)
        first = [s for lo, hi in t[m0]["slots"] for s in range(lo, hi + 1)][:RESHARD_SLOTS]
        self.reshard_tags = [tag_for(s, "r") for s in first]
        self.hot_slot = 8000
        self.hot_tag = tag_for(self.hot_slot, "hot")
        self.fail_tags = [tag_for(s, "f") for s in (12000, 13000, 14000, 15000)]
        self.plans = {}
        for name, addr, _ in LIBS:
            short = name.replace("-", "")
            self.plans[name] = {
                "name": name, "addr": addr, "interval": INTERVAL_S, "duration": 240,
                "stop": self.stop_file, "seeds": [["127.0.0.1", self.base]],
                "pairs": [["{%s}:%s:x" % (g, short), "{%s}:%s:y" % (g, short)]
                          for g in self.reshard_tags],
                "fail": ["{%s}:%s:%d" % (g, short, v) for v in range(FAIL_VARIANTS)
                         for g in self.fail_tags],
                "hot": [["{%s}:%s:a%d" % (self.hot_tag, short, v),
                         "{%s}:%s:b%d" % (self.hot_tag, short, v)] for v in range(HOT_PAIRS)],
            }
            with open(os.path.join(self.work, name + ".plan.json"), "w") as fp:
                json.dump(self.plans[name], fp, indent=1)

    def seed(self):
        """Filler keys in the reshard slots and every library's keys, before
        the capture starts (redis-cli --pipe to the owners)."""
        m0, m1, m2 = self.m
        by_port = {m0: [], m1: [], m2: []}
        for g in self.reshard_tags:
            by_port[m0] += ["{%s}:filler:%d" % (g, n) for n in range(FILLER_PER_SLOT)]
        for p in self.plans.values():
            by_port[m0] += [k for pair in p["pairs"] for k in pair]
            by_port[m2] += p["fail"]
            by_port[m1] += [k for pair in p["hot"] for k in pair]
        for port, keys in by_port.items():
            data = "".join("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\n0\r\n" % (len(k), k) for k in keys)
            r = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "--pipe"],
                               input=data, capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise RuntimeError("seeding %d: %s" % (port, r.stderr))
        log("seeded %s" % {p: len(k) for p, k in by_port.items()})

    def start_dumps(self):
        last = self.base + 19
        for name, flt in (("full.pcap", "tcp portrange %d-%d" % (self.base, last)),
                          ("full-bus.pcap", "tcp portrange %d-%d or tcp portrange %d-%d"
                           % (self.base, last, self.base + 10000, last + 10000))):
            path = os.path.join(self.work, name)
            err = open(path + ".log", "w")
            opts = ["-B", str(self.buffer_kib)] if self.buffer_kib else []
            p = subprocess.Popen(["tcpdump", "-i", self.iface] + opts + ["-s", "0", "-U", "-w", path, flt],
                                 stdout=subprocess.DEVNULL, stderr=err)
            self.dumps.append((p, path))
            deadline = time.time() + 10
            while time.time() < deadline:
                if "listening on" in open(path + ".log").read():
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError("tcpdump did not start: " + open(path + ".log").read())
        time.sleep(0.5)

    def start_libs(self, shim):
        clients = os.path.join(HERE, "clients")
        env = dict(os.environ, LD_PRELOAD=shim, NODE_PATH=os.path.join(self.work, "node_modules"))
        for name, addr, cmd in LIBS:
            plan = os.path.join(self.work, name + ".plan.json")
            argv = [c.replace("{clients}", clients).replace("PLAN", plan) for c in cmd]
            out = open(os.path.join(self.work, name + ".out"), "w")
            self.procs[name] = subprocess.Popen(argv, env=dict(env, SS_BIND_ADDR=addr),
                                                stdout=out, stderr=subprocess.STDOUT)
        self.event("libraries_started", libs={n: a for n, a, _ in LIBS})

    def wait_connected(self):
        """--midstream: until every library has a connection to each master
        (CLIENT LIST on the masters, at most 60 s), then MIDSTREAM_WARMUP_S
        more seconds of steps. Records each library's connections per node."""
        deadline = time.time() + 60
        while True:
            conns = {}
            for port in sorted(self.m):
                for line in cli(port, "CLIENT", "LIST").splitlines():
                    for f in line.split():
                        if f.startswith("addr="):
                            addr = f[5:].rsplit(":", 1)[0]
                            conns.setdefault(addr, {}).setdefault(str(port), 0)
                            conns[addr][str(port)] += 1
            missing = [n for n, a, _ in LIBS if not all(str(m) in conns.get(a, {}) for m in self.m)]
            if not missing:
                break
            if time.time() > deadline:
                raise RuntimeError("libraries not connected to every master in 60 s: %s" % missing)
            time.sleep(0.5)
        self.event("libraries_connected", conns={n: conns.get(a, {}) for n, a, _ in LIBS})
        time.sleep(MIDSTREAM_WARMUP_S)

    def start_load(self, shim):
        """--load: redis-benchmark bursts from LOAD_ADDR until the stop file."""
        bench = " ".join(["redis-benchmark", "-h", "127.0.0.1", "-p", str(self.base),
                          "-n", str(LOAD_REQUESTS)] + LOAD_ARGS)
        loop = ('while [ ! -e %s ]; do timeout 60 %s; sleep %s; done'
                % (self.stop_file, bench, LOAD_PAUSE_S))
        out = open(os.path.join(self.work, "load.out"), "w")
        self.load = subprocess.Popen(["bash", "-c", loop], stdout=out, stderr=subprocess.STDOUT,
                                     env=dict(os.environ, LD_PRELOAD=shim, SS_BIND_ADDR=LOAD_ADDR),
                                     start_new_session=True)
        self.event("load_started", addr=LOAD_ADDR, command=bench)

    def stop_load(self):
        if self.load is None:
            return
        try:
            self.load.wait(timeout=LOAD_PAUSE_S + 70)   # the loop sees the stop file
        except subprocess.TimeoutExpired:
            os.killpg(self.load.pid, signal.SIGTERM)
            self.load.wait(timeout=10)
        self.event("load_stopped", rc=self.load.returncode)
        self.load = None

    def reshard(self):
        m0, m1, _ = self.m
        self.event("reshard_begin", src=m0, dst=m1, slots=RESHARD_SLOTS)
        r = subprocess.run(["redis-cli", "--cluster", "reshard", "127.0.0.1:%d" % self.base,
                            "--cluster-from", self.topo[m0]["id"], "--cluster-to",
                            self.topo[m1]["id"], "--cluster-slots", str(RESHARD_SLOTS),
                            "--cluster-yes", "--cluster-pipeline", "5"],
                           capture_output=True, text=True, timeout=180)
        open(os.path.join(self.work, "reshard.log"), "w").write(r.stdout + r.stderr)
        if r.returncode != 0:
            raise RuntimeError("reshard failed, see reshard.log")
        self.event("reshard_end")

    def hand_migration(self):
        src, dst, s = self.m[1], self.m[0], self.hot_slot
        self.event("hand_migration_begin", slot=s, src=src, dst=dst)
        cluster_sh("slot-begin", self.cdir, s, src, dst)
        first = [pair[0] for p in self.plans.values() for pair in p["hot"]]
        out = cli(src, "MIGRATE", "127.0.0.1", dst, "", 0, 5000, "KEYS", *first)
        self.event("hand_migration_a_keys_moved", reply=out.strip(), keys=first)
        time.sleep(ASK_WINDOW_S)
        moved = cluster_sh("slot-move", self.cdir, s, src, dst, 100000, 50, 0.1)
        self.event("hand_migration_rest_moved", keys=moved)
        cluster_sh("slot-end", self.cdir, s, dst)
        self.event("hand_migration_end")

    def failover(self):
        m2 = self.m[2]
        rep = self.topo[m2]["replicas"][0]
        self.event("failover_begin", old_master=m2, replica=rep, roles=roles(topology(self.base)))
        cli(rep, "CLUSTER", "FAILOVER")
        # Done when the first node's CLUSTER NODES (the view recorded as the
        # roles) has the replica as master and the old master as its replica.
        deadline = time.time() + 30
        while time.time() < deadline:
            t = topology(self.base)
            if rep in t and m2 in t[rep]["replicas"]:
                break
            time.sleep(0.3)
        else:
            raise RuntimeError("failover did not complete in 30 s")
        self.topo = t
        self.event("failover_end", roles=roles(self.topo))

    def rebalance(self):
        self.event("rebalance_begin")
        r = subprocess.run(["redis-cli", "--cluster", "rebalance", "127.0.0.1:%d" % self.base,
                            "--cluster-threshold", "0.1", "--cluster-pipeline", "5"],
                           capture_output=True, text=True, timeout=180)
        open(os.path.join(self.work, "rebalance.log"), "w").write(r.stdout + r.stderr)
        if r.returncode != 0:
            raise RuntimeError("rebalance failed, see rebalance.log")
        self.topo = topology(self.base)
        self.event("rebalance_end", roles=roles(self.topo))

    def stop_libs(self):
        open(self.stop_file, "w").close()
        deadline = time.time() + 30
        for name, p in self.procs.items():
            try:
                p.wait(timeout=max(1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                log("%s did not stop, killing it" % name)
                p.kill(); p.wait()
        self.event("libraries_stopped", rc={n: p.returncode for n, p in self.procs.items()})
        self.procs = {}

    def stop_dumps(self):
        time.sleep(0.5)
        for p, _ in self.dumps:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill(); p.wait()
        self.dumps = []

    def cleanup(self):
        for p in self.procs.values():
            p.kill(); p.wait()
        self.procs = {}
        if self.load is not None:
            try:
                os.killpg(self.load.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.load.wait()
            self.load = None
        if self.dumps:
            self.stop_dumps()
        try:
            cluster_sh("stop", self.cdir)
        except Exception as e:  # noqa: BLE001 - best effort at the end
            log("cluster stop: %s" % e)

    def slice(self):
        for name, addr, _ in LIBS:
            out = os.path.join(self.work, name + ".pcap")
            subprocess.run(["tcpdump", "-r", os.path.join(self.work, "full.pcap"), "-w", out,
                            "host " + addr], check=True, capture_output=True, timeout=120)
            log("%s: %d bytes" % (out, os.path.getsize(out)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", type=int, default=31300)
    ap.add_argument("--work", default="/work/captures/libs")
    ap.add_argument("--midstream", action="store_true",
                    help="start tcpdump after every library is connected (see the docstring)")
    ap.add_argument("--any", action="store_true", help="tcpdump -i any instead of -i lo")
    ap.add_argument("--load", action="store_true", help="background redis-benchmark traffic")
    ap.add_argument("--buffer", type=int, default=None, metavar="KIB", help="tcpdump -B KIB")
    ap.add_argument("--delay-us", type=int, default=0, metavar="D",
                    help="one-way delay between the libraries and the nodes (see the docstring)")
    ap.add_argument("--delay-all", action="store_true",
                    help="--delay-us on every data-port connection, not only the libraries'")
    a = ap.parse_args()
    if a.delay_us < 0 or a.delay_us > 10000000:
        sys.exit("scenario.py: --delay-us must be 0..10000000")
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    if not os.path.isdir(os.path.join(work, "node_modules")):
        sys.exit("scenario.py: no %s/node_modules: npm install --prefix %s (scripts/libs/package.json)"
                 % (work, work))
    shim = os.path.join(work, "bindshim.so")
    subprocess.run(["gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-shared", "-fPIC", "-o", shim,
                    os.path.join(HERE, "bindshim.c"), "-ldl"], check=True)
    for f in ("stop",):
        if os.path.exists(os.path.join(work, f)):
            os.remove(os.path.join(work, f))
    run = Run(a.base, work, "any" if a.any else "lo", a.buffer)
    delay_dir = os.path.join(work, "netdelay")
    delay_cmd = None
    if a.delay_us:
        addrs = [addr for _, addr, _ in LIBS] + ([LOAD_ADDR] if a.load else [])
        key = lambda x: tuple(int(b) for b in x.split("."))
        scope = [] if a.delay_all else ["--src-range", "%s-%s" % (min(addrs, key=key),
                                                                  max(addrs, key=key))]
        delay_cmd = [DELAY_ON] + scope + [delay_dir, str(a.base), str(a.delay_us)]

    def on_term(signum, frame):
        raise KeyboardInterrupt("signal %d" % signum)
    signal.signal(signal.SIGTERM, on_term)
    try:
        run.start_cluster()
        if delay_cmd:
            if os.path.exists(os.path.join(delay_dir, "rules")):
                subprocess.run([DELAY_OFF, delay_dir], capture_output=True, timeout=60)
            r = subprocess.run(delay_cmd, capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise RuntimeError("delay-on.sh: %s" % r.stderr)
            run.event("delay_on", delay_us=a.delay_us, all=a.delay_all, rules=r.stdout.splitlines())
        run.plan_keys()
        run.seed()
        if a.midstream:
            run.start_libs(shim)
            if a.load:
                run.start_load(shim)
            run.wait_connected()
        run.start_dumps()
        run.event("capture_started", roles=roles(run.topo), masters=run.m,
                  hot_slot=run.hot_slot, reshard_tags=run.reshard_tags, fail_tags=run.fail_tags)
        if not a.midstream:
            run.start_libs(shim)
            if a.load:
                run.start_load(shim)
        time.sleep(8 if not a.midstream else 4)
        run.reshard(); time.sleep(4)
        run.hand_migration(); time.sleep(4)
        run.failover(); time.sleep(6)
        run.rebalance(); time.sleep(6)
        run.stop_libs()
        run.stop_load()
        run.stop_dumps()
    finally:
        try:
            if delay_cmd:
                r = subprocess.run([DELAY_OFF, delay_dir], capture_output=True, text=True,
                                   timeout=60)
                open(os.path.join(work, "netdelay.log"), "w").write(r.stdout + r.stderr)
                run.event("delay_off", rc=r.returncode)
        finally:
            opts = {k: v for k, v in (("midstream", a.midstream), ("any", a.any), ("load", a.load),
                                      ("buffer", a.buffer), ("delay_us", a.delay_us),
                                      ("delay_all", a.delay_all)) if v}
            with open(os.path.join(work, "events.json"), "w") as fp:
                json.dump(dict({"base": a.base, "events": run.events}, **opts), fp, indent=1)
            run.cleanup()
    run.slice()
    for name, _, _ in LIBS:
        log("%s: %s" % (name, open(os.path.join(work, name + ".out")).read().strip()[-600:]))


if __name__ == "__main__":
    main()
