#!/usr/bin/env python3
"""big_report.py BASE.json OUT.json [OBJECTS] [THREADS]

Writes a report like BASE (a real one) with OBJECTS objects (default
100,000) and THREADS threads (default 2,000): the shape of a program with
very many objects, for the HTML report's size and load-time checks. The
objects are copies of BASE's first one with new names, addresses and counts
that fall off like a power law; the series and the matrix name a few of
them.
"""
import copy
import json
import sys


def main(argv):
    base = json.load(open(argv[1]))
    nobj = int(argv[3]) if len(argv) > 3 else 100000
    nthr = int(argv[4]) if len(argv) > 4 else 2000
    proto = base["objects"][0]
    objs = []
    for i in range(nobj):
        o = copy.deepcopy(proto)
        o["name"] = "block_%d@big.c:%d" % (i, 10 + i % 900)
        o["site"] = o["name"]
        o["kind"] = "heap"
        o["addr"] = "0x%x" % (0x7f0000000000 + 4096 * i)
        o["size"] = 64 + (i % 50) * 64
        scale = 1.0 / (1 + i) ** 0.8
        o["share"] = round(0.3 * scale, 6)
        o["totals"] = {k: round(v * scale) for k, v in proto["totals"].items()}
        objs.append(o)
    base["objects"] = objs
    t0 = base["threads"][0]
    base["threads"] = [dict(copy.deepcopy(t0), id=i, tid=100000 + i) for i in range(nthr)]
    json.dump(base, open(argv[2], "w"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
