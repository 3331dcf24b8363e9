#!/usr/bin/python3
"""alternate.py - two commands timed in alternation, and how they compare.

  bench/alternate.py [--runs N] [--warmup W] [--seed S] -- CMD_A... -- CMD_B...

Runs A, B, A, B, ... (N runs of each after W warm-up pairs), each with its
output thrown away, and prints one line per command (median and fastest wall
in ms, median CPU ms) and then

  ratio A/B: median M (95% interval LO-HI), fastest F, B faster in K of N pairs

On a shared machine the load drifts over seconds; timing the two commands
in turn puts the same drift on both, so their ratio is steadier than the
ratio of two separate series (hyperfine runs one command's series after the
other's). The interval is a bootstrap of the ratio of medians (resampling
the runs, seeded, 2000 rounds); an interval that contains 1.00 means this
machine could not tell the two apart. Exit status 1 when a run failed.
"""
import os
import random
import statistics
import sys
import time


def usage():
    sys.exit(__doc__.strip().split("\n\n")[1])


def parse(argv):
    opts = {"runs": 10, "warmup": 1, "seed": 1}
    i = 0
    while i < len(argv) and argv[i] != "--":
        name = argv[i].lstrip("-")
        if name not in opts or i + 1 >= len(argv):
            usage()
        opts[name] = int(argv[i + 1])
        i += 2
    rest = argv[i + 1:] if i < len(argv) else []
    if "--" not in rest:
        usage()
    cut = rest.index("--")
    a, b = rest[:cut], rest[cut + 1:]
    if not a or not b or opts["runs"] < 1:
        usage()
    return opts, a, b


def run_once(cmd):
    """(wall s, cpu s) of one run of cmd; raises when it fails."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        acts = [(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)]
        start = time.perf_counter()
        pid = os.posix_spawnp(cmd[0], cmd, os.environ, file_actions=acts)
        _, status, usage_ = os.wait4(pid, 0)
        wall = time.perf_counter() - start
    finally:
        os.close(null)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("%s exited %d" % (cmd[0], os.waitstatus_to_exitcode(status)))
    return wall, usage_.ru_utime + usage_.ru_stime


def bootstrap(a, b, rounds, rng):
    """95% interval of median(a) / median(b), resampling each series."""
    ratios = []
    for _ in range(rounds):
        ra = [rng.choice(a) for _ in a]
        rb = [rng.choice(b) for _ in b]
        ratios.append(statistics.median(ra) / statistics.median(rb))
    ratios.sort()
    return ratios[int(0.025 * rounds)], ratios[int(0.975 * rounds) - 1]


def main():
    opts, a, b = parse(sys.argv[1:])
    walls = {"A": [], "B": []}
    cpus = {"A": [], "B": []}
    try:
        for i in range(opts["warmup"] + opts["runs"]):
            for name, cmd in (("A", a), ("B", b)):
                w, c = run_once(cmd)
                if i >= opts["warmup"]:
                    walls[name].append(w)
                    cpus[name].append(c)
    except (OSError, RuntimeError) as e:
        print("alternate.py: %s" % e, file=sys.stderr)
        return 1
    for name, cmd in (("A", a), ("B", b)):
        w = walls[name]
        print("%s: median %.1f ms, fastest %.1f ms, cpu median %.1f ms  (%s)" % (
            name, 1e3 * statistics.median(w), 1e3 * min(w),
            1e3 * statistics.median(cpus[name]), " ".join(cmd)))
    lo, hi = bootstrap(walls["A"], walls["B"], 2000, random.Random(opts["seed"]))
    faster = sum(1 for x, y in zip(walls["A"], walls["B"]) if y < x)
    print("ratio A/B: median %.2f (95%% interval %.2f-%.2f), fastest %.2f, "
          "B faster in %d of %d pairs" % (
              statistics.median(walls["A"]) / statistics.median(walls["B"]), lo, hi,
              min(walls["A"]) / min(walls["B"]), faster, len(walls["A"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
