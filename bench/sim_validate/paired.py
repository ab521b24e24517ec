#!/usr/bin/env python3
"""paired.py KERNEL ROUNDS BASE CANDIDATE... - CPU time of instrumented
builds of bench/sim_validate/kernels.c against each other, robust to the
host's speed swings: each round runs BASE and one CANDIDATE at the same
time, one per vCPU (taskset; the CPUs swap every round), so that both see
the same host state, and prints the median of the per-round ratios
CANDIDATE / BASE (a build against itself: ~1.000) with every round's
ratio. Needs two idle CPUs. Single-threaded kernels only; the sim backend
under bench/sim_validate/cachegrind.conf, 3C off, the oracle written at
exit (as run.sh speed).

  python3 bench/sim_validate/paired.py stencil 11 /tmp/k_old build/bench/sim_validate/kernels_ameba
"""
import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

if len(sys.argv) < 5 or sys.argv[1].endswith("_2t"):
    sys.exit(__doc__)
kernel, rounds, base, cands = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
here = os.path.dirname(os.path.abspath(__file__))
tmp = tempfile.mkdtemp(prefix="paired.")
atexit.register(shutil.rmtree, tmp, True)
env = dict(os.environ, AMEBA_BACKEND="sim", AMEBA_PRESET=os.path.join(here, "cachegrind.conf"),
           AMEBA_SIM_3C="0", AMEBA_SIM_TLB="0")


def start(binary, cpu, tag):
    e = dict(env, AMEBA_ORACLE=os.path.join(tmp, tag + ".json"))
    return subprocess.Popen(["/usr/bin/time", "-f", "%U %S", "-o", os.path.join(tmp, tag + ".t"),
                             "taskset", "-c", str(cpu), binary, kernel],
                            env=e, stdout=subprocess.DEVNULL)


def cpu_s(tag):
    u, s = map(float, open(os.path.join(tmp, tag + ".t")).read().split()[-2:])
    return u + s


for cand in cands:
    ratios = []
    for i in range(rounds):
        ca, cb = (0, 1) if i % 2 == 0 else (1, 0)
        p, q = start(base, ca, "base"), start(cand, cb, "cand")
        if p.wait() or q.wait():
            sys.exit(f"paired: a run of {kernel} failed")
        ratios.append(cpu_s("cand") / cpu_s("base"))
    print(f"{cand} / {base}: median {statistics.median(ratios):.3f}  "
          + " ".join(f"{r:.2f}" for r in ratios))
