// node_client.js LIB PLAN.json - the scenario workload with one of the npm
// cluster clients (LIB: node-redis, ioredis, iovalkey, glide), reads from
// replicas enabled; each step's five commands are issued concurrently
// (Promise.allSettled), as a node application would. The modules come from
// NODE_PATH (scripts/libs/package.json, installed outside the repository).
// Summary (ok, errors by message) on stdout.
'use strict';
const fs = require('fs');
const [lib, planPath] = process.argv.slice(2);
const plan = JSON.parse(fs.readFileSync(planPath, 'utf8'));
const sum = { lib, version: '', ok: 0, errors: {} };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The installed version, from the package's own package.json (read as a
// file: some packages do not export it).
function version(pkg) {
  const dir = (process.env.NODE_PATH || '').split(':')[0];
  return JSON.parse(fs.readFileSync(`${dir}/${pkg}/package.json`, 'utf8')).version;
}

// Each adapter: connect() -> client with mset(obj), get, set, mget(arr), close.
const adapters = {
  'node-redis': async () => {
    const { createCluster } = require('redis');
    sum.version = version('@redis/client');
    const c = createCluster({
      rootNodes: plan.seeds.map(([h, p]) => ({ url: `redis://${h}:${p}` })),
      useReplicas: true,
    });
    c.on('error', (e) => note(e));
    await c.connect();
    return { mset: (o) => c.mSet(o), get: (k) => c.get(k), set: (k, v) => c.set(k, String(v)),
             mget: (a) => c.mGet(a), close: () => c.quit() };
  },
  ioredis: async () => ioredisLike('ioredis'),
  iovalkey: async () => ioredisLike('iovalkey'),
  glide: async () => {
    const { GlideClusterClient } = require('@valkey/valkey-glide');
    sum.version = version('@valkey/valkey-glide');
    const c = await GlideClusterClient.createClient({
      addresses: plan.seeds.map(([host, port]) => ({ host, port })),
      readFrom: 'preferReplica', requestTimeout: 2000,
    });
    return { mset: (o) => c.mset(o), get: (k) => c.get(k), set: (k, v) => c.set(k, String(v)),
             mget: (a) => c.mget(a), close: () => c.close() };
  },
};

function ioredisLike(pkg) {
  const { Cluster } = require(pkg);
  sum.version = version(pkg);
  const c = new Cluster(plan.seeds.map(([host, port]) => ({ host, port })),
                        { scaleReads: 'slave' });
  c.on('error', (e) => note(e));
  return { mset: (o) => c.mset(o), get: (k) => c.get(k), set: (k, v) => c.set(k, v),
           mget: (a) => c.mget(a), close: () => c.quit() };
}

function note(e) {
  const k = String((e && e.message) || e).split(' ')[0].slice(0, 40);
  sum.errors[k] = (sum.errors[k] || 0) + 1;
}

async function main() {
  const rc = await adapters[lib]();
  const deadline = Date.now() + plan.duration * 1000;
  let i = 0;
  while (Date.now() < deadline && !fs.existsSync(plan.stop)) {
    const [x, y] = plan.pairs[i % plan.pairs.length];
    const f = plan.fail[i % plan.fail.length];
    const [a, b] = plan.hot[i % plan.hot.length];
    const res = await Promise.allSettled([
      rc.mset({ [x]: String(i), [y]: String(i) }), rc.get(x),
      i % 2 ? rc.get(f) : rc.set(f, i), rc.mget([a, b]), rc.set(a, i)]);
    for (const r of res) { if (r.status === 'fulfilled') sum.ok++; else note(r.reason); }
    i++;
    await sleep(plan.interval * 1000);
  }
  sum.steps = i;
  try { await rc.close(); } catch (e) { note(e); }
  console.log(JSON.stringify(sum));
  process.exit(0);
}
main().catch((e) => { note(e); console.log(JSON.stringify(sum)); process.exit(1); });
