#!/usr/bin/env python3
"""bench/run_cost: what an `ameba run` costs over the simulation alone (issue 19)

For each program (bench/run_cost/programs.c, built with `ameba cc -O2`):
  - oracle_cpu_s_<k>: CPU seconds (user + system, the process tree) of the
    program under AMEBA_BACKEND=sim with AMEBA_ORACLE set (every access
    simulated, every metric counted per object and thread);
  - run_cpu_s_<k>: the same for `ameba run --what-if 0 -- PROGRAM` (the
    default strategy objects,threads, all metrics; agent and target);
  - run_over_oracle_<k>: their ratio (target: <= 1.15);
  - run_one_metric_cpu_s_<k>, run_all_metrics_cpu_s_<k>: `ameba run
    --what-if 0 --strategy objects:metrics=l1d_miss` and `...:metrics=all`;
  - run_all_metrics_over_one_<k>: their ratio (target: <= 1.05);
  - whatif_cpu_s_<k>: a default `ameba run` (with its what-if
    re-simulations, docs/whatif.md) minus run_cpu_s: what the predictions
    add, reported apart (each is one more simulated run of the program).
Each figure is the median of RUNS (3) runs, interleaved; the spread is
printed beside it. The 2-thread program (fs2) runs in the simulator's
ordered mode, whose CPU time on a 2-vCPU VM depends on which vCPU each
thread lands on (a cache line takes ~1.5 us to move between them): its
simulation alone measured 3.04-3.70 s free and 2.54-2.67 s pinned to one
CPU. Its runs, every kind alike, are pinned to CPU 0 (`taskset -c 0`;
the agent and the target's MRI server thread with them, so the CPU
seconds still add up), so that the ratios measure what `ameba run` adds and
not the host's placement; RUN_COST_PIN=0 runs them free.

usage: run_cost.py BUILD_DIR [PROGRAM...]
env:   RUNS (3), RUN_COST_PIN (1), AMEBA_PRESET (default: skylake-sp), AMEBA_COND_SERVED
       (unset: the served counters, the default, docs/mri.md; 0 = per access)
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile

# name, arguments: long runs (~22 s for jacobi under the simulator on the
# 2-vCPU development VM, 7-17 s for the others; start-up under 5% of each)
# (the last field: pinned to one CPU, see the docstring)
PROGRAMS = [
    ("jacobi", ["jacobi", "120"], False),
    ("stream", ["stream", "100"], False),
    ("fs2", ["fs2", "15000000"], True),
    ("blocks", ["blocks", "120"], False),
]


def say(name, value):
    print(f"{name}: {value}", flush=True)


def cpu_of(cmd, env):
    """CPU seconds of cmd and every process it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       timeout=3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 3):
        sys.stderr.write(p.stderr.decode(errors="replace")[-2000:])
        raise SystemExit(f"run_cost: {' '.join(cmd)} exited with {p.returncode}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    only = set(sys.argv[2:])
    ameba = os.path.join(build, "bin", "ameba")
    prog = os.path.join(build, "bench", "run_cost", "programs")
    runs = int(os.environ.get("RUNS", "3"))
    env = dict(os.environ)
    env.setdefault("AMEBA_PRESET", "skylake-sp")
    env.setdefault("AMEBA_COND_SERVED", "1")    # as the default; 0 matches every counter per access
    say("preset", env["AMEBA_PRESET"])
    say("served", env["AMEBA_COND_SERVED"])
    say("runs", runs)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        for name, args, pinned in PROGRAMS:
            if only and name not in only:
                continue
            pin = ["taskset", "-c", "0"] if pinned and os.environ.get("RUN_COST_PIN", "1") != "0" else []
            cmd = [prog] + args
            kinds = {
                "oracle": (pin + cmd, dict(env, AMEBA_BACKEND="sim",
                                     AMEBA_ORACLE=os.path.join(tmp, "o.json"))),
                "run": (pin + [ameba, "run", "-q", "--what-if", "0", "-o", out, "--"] + cmd, env),
                "one": (pin + [ameba, "run", "-q", "--what-if", "0", "--strategy",
                         "objects:metrics=l1d_miss", "-o", out, "--"] + cmd, env),
                "all": (pin + [ameba, "run", "-q", "--what-if", "0", "--strategy",
                         "objects:metrics=all", "-o", out, "--"] + cmd, env),
                "default": (pin + [ameba, "run", "-q", "-o", out, "--"] + cmd, env),
            }
            if pin:
                say(f"pinned_{name}", "cpu 0")
            t = {k: [] for k in kinds}
            for r in range(runs):
                for k, (c, e) in kinds.items():
                    t[k].append(cpu_of(c, e))
                    sys.stderr.write(f"  {name} run {r + 1} {k}: {t[k][-1]:.2f} s\n")
            med = {k: statistics.median(v) for k, v in t.items()}

            def spread(k):
                return f"{min(t[k]):.2f}..{max(t[k]):.2f}"
            say(f"oracle_cpu_s_{name}", f"{med['oracle']:.2f} ({spread('oracle')})")
            say(f"run_cpu_s_{name}", f"{med['run']:.2f} ({spread('run')})")
            say(f"run_over_oracle_{name}", f"{med['run'] / med['oracle']:.3f}")
            say(f"run_one_metric_cpu_s_{name}", f"{med['one']:.2f} ({spread('one')})")
            say(f"run_all_metrics_cpu_s_{name}", f"{med['all']:.2f} ({spread('all')})")
            say(f"run_all_metrics_over_one_{name}", f"{med['all'] / med['one']:.3f}")
            say(f"whatif_cpu_s_{name}", f"{med['default'] - med['run']:.2f}")
    say("done", "")


if __name__ == "__main__":
    main()
