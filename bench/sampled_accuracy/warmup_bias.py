#!/usr/bin/env python3
"""bench/sampled_accuracy/warmup_bias: the bias each warm-up choice leaves on every metric.

Sampled simulation keeps the caches, TLBs and directory from one burst to the
next (stale: the program ran dormant in between) and simulates a warm-up of W
before each measured burst. For each program of progs/ and each W of WARMUPS,
one `ameba run --sampled --sampling PERIOD/W/BURST` is compared with the exact
run's program totals (the report's `totals`):

  bias_<metric>_<k>_w<W>   sampled total / exact total - 1, in percent
                           (l1d_miss, l2_miss, llc_miss, tlb_miss, coh_miss;
                           '-' when the exact total is under 1000)
  slowdown_<k>_w<W>        the sampled run's wall time over native
  simulated_pct_<k>_w<W>   the accesses simulated in measured bursts, percent

A warm-up that is too short leaves the levels whose capacity it does not
refill with the stale state of the last burst: misses that the dormant
stretch would have caused are missing (the lines are still there), or lines
the program has moved on from are still resident. The bias of each metric
against W shows which levels a choice warms.

usage: warmup_bias.py BUILD_DIR [PROGRAM...]
env:   SCALE (1), RUNS (1: runs per choice, the bias printed is their mean),
       WARMUPS (0ms,1ms,5ms,20ms), PERIOD (50ms), BURST (10ms),
       EXACT_DIR (the exact reports of sampled_accuracy.py, reused; the
       exact run is made and kept there when missing), AMEBA_PRESET
       (default: tests/workloads/design.conf)
Prints `name: value` lines; never fails on a figure.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sampled_accuracy as sa  # noqa: E402  (the programs, wall(), report())

METRICS = ["l1d_miss", "l2_miss", "llc_miss", "tlb_miss", "coh_miss"]


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[1])
    progs = sys.argv[2:] or sa.PROGS
    ameba = os.path.join(build, "bin", "ameba")
    scale = os.environ.get("SCALE", "1")
    runs = int(os.environ.get("RUNS", "1"))
    warmups = os.environ.get("WARMUPS", "0ms,1ms,5ms,20ms").split(",")
    period = os.environ.get("PERIOD", "50ms")
    burst = os.environ.get("BURST", "10ms")
    env = dict(os.environ)
    env.setdefault("AMEBA_PRESET", os.path.join(sa.SRC, "tests", "workloads", "design.conf"))
    tmp = tempfile.mkdtemp(prefix="ameba-warmup-")
    keep = os.environ.get("EXACT_DIR") or tmp
    print(f"scale: {scale}")
    print(f"cycle: {period} period, {burst} burst, warm-ups {','.join(warmups)}")
    for k in progs:
        src = os.path.join(HERE, "progs", k + ".c")
        inst, nat = os.path.join(tmp, k), os.path.join(tmp, k + "_native")
        ok = True
        for cmd in ([ameba, "cc", "-O2", "-pthread", src, "-o", inst],
                    ["gcc", "-O2", "-pthread", src, "-o", nat]):
            p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if p.returncode:
                print(f"build_failed_{k}: {p.stderr.strip()[:200]}")
                ok = False
                break
        if not ok:
            continue
        t_nat = min(sa.wall([nat, scale], env)[0] for _ in range(3))
        ex = os.path.join(keep, f"{k}_exact_{scale}.json")
        if not os.path.exists(ex):
            sa.wall([ameba, "run", "--exact", "--what-if", "0", "-q", "-o", ex, "--", inst,
                     scale], env)
        exact = sa.report(ex)
        if not exact:
            print(f"exact_failed_{k}")
            continue
        et = exact.get("totals", {})
        for w in warmups:
            sums = {m: 0.0 for m in METRICS}
            walls, frac, n = [], [], 0
            for r in range(runs):
                sp = os.path.join(tmp, f"{k}_w{w}_{r}.json")
                t, _ = sa.wall([ameba, "run", "--sampled", "--sampling", f"{period}/{w}/{burst}",
                                "--what-if", "0", "-q", "-o", sp, "--", inst, scale], env)
                rep = sa.report(sp)
                if not rep:
                    continue
                n += 1
                walls.append(t)
                frac.append((rep.get("sampling") or {}).get("fraction_simulated", 0.0))
                for m in METRICS:
                    sums[m] += rep.get("totals", {}).get(m, 0)
            if not n:
                print(f"sampled_failed_{k}_w{w}")
                continue
            for m in METRICS:
                e = et.get(m, 0)
                val = f"{100 * (sums[m] / n / e - 1):+.1f}" if e >= 1000 else "-"
                print(f"bias_{m}_{k}_w{w}: {val}")
            print(f"slowdown_{k}_w{w}: {min(walls) / t_nat:.2f}")
            print(f"simulated_pct_{k}_w{w}: {100 * max(frac):.2f}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
