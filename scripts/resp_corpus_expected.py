#!/usr/bin/python3
"""resp_corpus_expected.py - expected counts for the public captures in
tests/fixtures/resp/corpus, from the other tools that read them.

  resp_corpus_expected.py CORPUS_DIR SHARED_CORPUS_DIR

For each capture it prints (to CAPTURE.expected.auto, for a person to review and
turn into CAPTURE.expected) what tshark's RESP dissector counts as requests per
command name, and, for spicy-redis traces, how many commands per name the
spicy-redis analyzer logged with a reply (Baseline/*/redis.log).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resp_scenarios  # noqa: E402

# spicy trace name -> its Baseline directory
BASELINE = {
    "almost-resp": "tests.almost-redis",
    "client-skip-while-off": "tests.client-skip-while-off",
    "django-cache": "tests.django",
    "django-cloud": "tests.django-cloud",
    "excessive-pipelining": "tests.excessive-pipelining",
    "pipeline-quotes": "tests.pipeline-with-quotes",
    "pipeline-with-commands": "tests.pipelined-with-commands",
    "pipelining-example": "tests.pipelined",
    "pubsub": "tests.pubsub",
    "reply-off-on-2conn": "tests.client-reply-off-2conn",
    "reply-off-on": "tests.client-reply-off",
    "stream": "tests.stream",
}


def baseline_counts(path):
    """Per command name: (lines, lines with a reply) in a spicy redis.log."""
    out = {}
    fields = None
    for line in open(path, encoding="latin-1"):
        line = line.rstrip("\n")
        if line.startswith("#fields"):
            fields = line.split("\t")[1:]
            continue
        if line.startswith("#") or not fields:
            continue
        row = dict(zip(fields, line.split("\t")))
        name = row.get("cmd.command", "-")
        if name == "-":
            continue
        name = name.upper()
        lines, replied = out.get(name, (0, 0))
        replied += row.get("response.err", "-") != "-"
        out[name] = (lines + 1, replied)
    return out


def main(corpus, shared):
    for f in sorted(os.listdir(corpus)):
        if not (f.endswith(".pcap") or f.endswith(".pcapng")):
            continue
        port = 10625 if "django-cloud" in f else 6379
        path = os.path.join(corpus, f)
        stem = f.rsplit(".", 1)[0]
        with open(os.path.join(corpus, stem + ".expected.auto"), "w") as o:
            o.write("port %d\n" % port)
            for name, n in sorted(resp_scenarios.tshark_counts(path, port).items()):
                o.write("requests %s %d\n" % (name, n))
            if stem.startswith("spicy-") and stem[6:] in BASELINE:
                log = os.path.join(shared, "spicy-redis", "Baseline", BASELINE[stem[6:]],
                                   "redis.log")
                for name, (lines, replied) in sorted(baseline_counts(log).items()):
                    o.write("baseline-requests %s %d\n" % (name, lines))
                    o.write("paired %s %d\n" % (name, replied))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
