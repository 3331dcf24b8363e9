#!/usr/bin/python3
"""gen-command-table.py - write analysis/command_table.c from a real redis-server.

Usage:  /usr/bin/python3 scripts/gen-command-table.py [--out analysis/command_table.c]
                                                       [--port 30301] [--server redis-server]

Starts a throw-away redis-server on 127.0.0.1:PORT (no persistence, temp dir),
reads COMMAND INFO (arity, flags, key specs, subcommands) and COMMAND DOCS (group)
and writes the C table that analysis/keys.c interprets. The server is always
stopped before the script exits.

Key specs (https://redis.io/docs/latest/develop/reference/key-specs/):
  begin_search  index N            the search starts at argument N
                keyword K from F   at the argument after the first K at or after F
  find_keys     range L, step S, limit M
                                   keys up to L (L < 0: counted from the end; with
                                   M > 1 only 1/M of the remaining arguments)
                keynum I, first F, step S
                                   the argument at begin+I holds the key count,
                                   keys start at begin+F

Specs the server marks "unknown" are replaced by hand-written procedures (SORT's
STORE) or dropped (SORT's BY/GET patterns: they name keys by content, not
position). A keyword search that runs from the end (negative startfrom) has an
explicit forward start here (MIGRATE ... KEYS: from argument 6); any other one
stops the script so that a person looks at it.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import redis

# Forward start for keyword searches the server runs from the end.
BACKWARD_KEYWORD_START = {("MIGRATE", "KEYS"): 6}
# Commands whose "unknown" key spec is replaced by a procedure in keys.c.
PROCS = {"SORT": "AN_PROC_SORT_STORE"}

MAX_SPECS = 3  # keys.c keeps one scratch word per spec (resp_keyctx.scratch[1..3])

CMD_FLAGS = {
    "readonly": "AN_CMD_READONLY",
    "write": "AN_CMD_WRITE",
    "movablekeys": "AN_CMD_MOVABLE",
    "admin": "AN_CMD_ADMIN",
    "blocking": "AN_CMD_BLOCKING",
}
SPEC_FLAGS = {
    "RO": "AN_KS_RO",
    "RW": "AN_KS_RW",
    "OW": "AN_KS_OW",
    "RM": "AN_KS_RM",
    "incomplete": "AN_KS_INCOMPLETE",
}


def text(x):
    """bytes -> str, recursively through lists."""
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, list):
        return [text(i) for i in x]
    return x


def pairs(flat):
    """A flat [k1, v1, k2, v2] reply (RESP2 map) as a dict."""
    return dict(zip(flat[0::2], flat[1::2]))


def start_server(binary, port, workdir):
    """Start redis-server on loopback; return the Popen handle once it answers."""
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", workdir, "--daemonize", "no",
         "--loglevel", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(host="127.0.0.1", port=port)
    for _ in range(100):  # bounded: 10 s
        try:
            client.ping()
            return proc, client
        except redis.ConnectionError:
            if proc.poll() is not None:
                raise SystemExit("redis-server exited at start (port %d busy?)" % port)
            time.sleep(0.1)
    proc.terminate()
    raise SystemExit("redis-server did not answer on port %d" % port)


def raw_command(client, *args):
    """Run a command without redis-py's reply callbacks (they reshape COMMAND)."""
    conn = client.connection_pool.get_connection(args[0])
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        client.connection_pool.release(conn)


def parse_spec(cmd, ks):
    """One key spec reply -> dict for the C table, or None to drop it."""
    d = pairs(ks)
    bs = pairs(d["begin_search"])
    fk = pairs(d["find_keys"])
    flags = [SPEC_FLAGS[f] for f in d.get("flags", []) if f in SPEC_FLAGS]
    if bs["type"] == "unknown" or fk["type"] == "unknown":
        return None
    spec = {"flags": flags}
    bspec = pairs(bs["spec"])
    if bs["type"] == "index":
        spec["bs"] = ("AN_BS_INDEX", bspec["index"], None)
    elif bs["type"] == "keyword":
        start = bspec["startfrom"]
        if start < 0:
            key = (cmd.upper(), bspec["keyword"].upper())
            if key not in BACKWARD_KEYWORD_START:
                raise SystemExit("%s: keyword %s searched from the end: add a forward "
                                 "start to BACKWARD_KEYWORD_START" % key)
            start = BACKWARD_KEYWORD_START[key]
        spec["bs"] = ("AN_BS_KEYWORD", start, bspec["keyword"].upper())
    else:
        raise SystemExit("%s: begin_search type %s not supported" % (cmd, bs["type"]))
    fspec = pairs(fk["spec"])
    if fk["type"] == "range":
        spec["fk"] = ("AN_FK_RANGE", fspec["lastkey"], fspec["keystep"], fspec["limit"])
    elif fk["type"] == "keynum":
        if spec["bs"][0] != "AN_BS_INDEX":
            raise SystemExit("%s: keynum after a keyword search not supported" % cmd)
        spec["fk"] = ("AN_FK_KEYNUM", fspec["keynumidx"], fspec["keystep"],
                      fspec["firstkey"])
    else:
        raise SystemExit("%s: find_keys type %s not supported" % (cmd, fk["type"]))
    return spec


def collect(info, docs):
    """COMMAND INFO reply -> sorted list of command dicts (subcommands as A|B)."""
    out = []

    def add(entry, group):
        name = entry[0].upper()
        specs = []
        dropped = 0
        for ks in entry[8]:
            s = parse_spec(name, ks)
            if s is None:
                dropped += 1
            else:
                specs.append(s)
        proc = PROCS.get(name, "AN_PROC_NONE")
        if len(specs) > MAX_SPECS:
            raise SystemExit("%s: %d key specs, keys.c handles %d" %
                             (name, len(specs), MAX_SPECS))
        flags = [CMD_FLAGS[f] for f in entry[2] if f in CMD_FLAGS]
        subs = entry[9] if len(entry) > 9 else []
        if subs:
            flags.append("AN_CMD_CONTAINER")
        out.append({"name": name, "arity": entry[1], "flags": flags, "specs": specs,
                    "proc": proc, "group": group, "dropped": dropped})
        for sub in subs:
            add(sub, group)

    for entry in info:
        if entry is None:
            continue
        d = docs.get(entry[0], {})
        add(entry, d.get("group", ""))
    out.sort(key=lambda c: c["name"].encode())
    return out


def c_flags(flags):
    return " | ".join(flags) if flags else "0"


def render(cmds, version):
    """The C source text."""
    lines = []
    w = lines.append
    w("/*")
    w(" * command_table.c - GENERATED, do not edit. Where the keys of each command are.")
    w(" *")
    w(" * Generated by scripts/gen-command-table.py from redis-server %s" % version)
    w(" * (COMMAND INFO key specs, COMMAND DOCS groups). To regenerate:")
    w(" *   /usr/bin/python3 scripts/gen-command-table.py --out analysis/command_table.c")
    w(" * Sorted by name (strcmp order) for binary search; subcommands as \"OBJECT|ENCODING\".")
    w(" * Key specs the server marks \"unknown\" were dropped (SORT's STORE is handled by")
    w(" * the AN_PROC_SORT_STORE procedure in keys.c); MIGRATE's KEYS search starts at 6.")
    w(" */")
    w('#include "analysis/keys_internal.h"')
    w("")
    w("const an_keyspec an_keyspecs[] = {")
    spec_index = 0
    for c in cmds:
        c["spec0"] = spec_index
        for s in c["specs"]:
            bs_type, bs_arg, kw = s["bs"]
            fk_type, a, step, b = s["fk"]
            kwtext = '"%s"' % kw if kw else "NULL"
            w("    {%s, %s, %d, %s, %d, %d, %d, %s}, /* %s */" %
              (bs_type, fk_type, bs_arg, kwtext, a, step, b, c_flags(s["flags"]), c["name"]))
            spec_index += 1
    if spec_index == 0:
        w("    {0}")
    w("};")
    w("")
    w("const an_cmd an_commands[] = {")
    for c in cmds:
        w('    {"%s", %d, %s, %d, %d, %s, "%s"},' %
          (c["name"], c["arity"], c_flags(c["flags"]), c["spec0"], len(c["specs"]),
           c["proc"], c["group"]))
    w("};")
    w("")
    w("const size_t an_n_commands = sizeof an_commands / sizeof an_commands[0];")
    w("const char an_command_table_version[] = \"%s\";" % version)
    w("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..",
                                                  "analysis", "command_table.c"))
    ap.add_argument("--port", type=int, default=30301)
    ap.add_argument("--server", default=shutil.which("redis-server") or "redis-server")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="slotscope-cmdtable-")
    proc = None
    try:
        proc, client = start_server(args.server, args.port, workdir)
        version = text(client.info("server")["redis_version"])
        info = text(raw_command(client, "COMMAND", "INFO"))
        if not info:  # COMMAND INFO without names is 7.0+; older: COMMAND
            info = text(raw_command(client, "COMMAND"))
        docs_raw = text(raw_command(client, "COMMAND", "DOCS"))
        docs = {}
        for name, body in zip(docs_raw[0::2], docs_raw[1::2]):
            docs[name] = pairs(body)
        cmds = collect(info, docs)
        with open(args.out, "w") as f:
            f.write(render(cmds, version))
        print("wrote %s: %d commands from redis-server %s" % (args.out, len(cmds), version))
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
