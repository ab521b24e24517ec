#!/usr/bin/env python3
"""bench/memory_growth: peak memory of the target and the agent (issue 20)

Runs `ameba run --what-if 0` on
  - churn_alloc N (bench/memory_growth/churn_alloc.c, N allocations, at
    most 64 live): target_peak_rss_mb_alloc (the target's VmHWM) and its
    dormant figure (the same program under AMEBA_MRI=0 with no backend
    active: the runtime's own floor), target_growth_mb_alloc (the
    difference; target: under 64 MB at N = 10,000,000);
  - tests' wl_thread_churn (10,000 threads): agent_peak_rss_mb_threads
    (the agent's VmHWM; target: under 128 MB).
Peaks are read from /proc/PID/status (VmHWM) every 50 ms until the process
exits (the dormant run's from wait4: it is too short to poll).

usage: memory_growth.py BUILD_DIR [N]
"""
import os
import subprocess
import sys
import tempfile
import time


def hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def dormant_peak(cmd, env):
    """The peak RSS (kB) of cmd, which starts no process: wait4's ru_maxrss
    (exact for a run too short to poll)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"memory_growth: {' '.join(cmd)} exited with {p.returncode}")
    return ru.ru_maxrss


def run_peaks(cmd, env):
    """Runs cmd; returns (exit status, its own peak kB, its first child's peak kB)."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    own = child = 0
    kid = None
    while p.poll() is None:
        own = max(own, hwm_kb(p.pid) or 0)
        if kid is None:
            ks = children(p.pid)
            kid = ks[0] if ks else None
        if kid is not None:
            child = max(child, hwm_kb(kid) or 0)
        time.sleep(0.05)
    err = p.stderr.read().decode(errors="replace")
    if p.returncode not in (0, 3):
        sys.stderr.write(err[-2000:])
        raise SystemExit(f"memory_growth: {' '.join(cmd)} exited with {p.returncode}")
    return p.returncode, own, child


def say(k, v):
    print(f"{k}: {v}", flush=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    n = sys.argv[2] if len(sys.argv) > 2 else "10000000"
    ameba = os.path.join(build, "bin", "ameba")
    prog = os.path.join(build, "bench", "memory_growth", "churn_alloc")
    churn = os.path.join(build, "tests", "bin", "wl_thread_churn")
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        dormant = dormant_peak([prog, n], dict(env, AMEBA_MRI="0"))
        _, agent, target = run_peaks([ameba, "run", "-q", "--what-if", "0", "-o", out, "--",
                                      prog, n], env)
        say("allocations", n)
        say("target_dormant_rss_mb_alloc", f"{dormant / 1024:.1f}")
        say("target_peak_rss_mb_alloc", f"{target / 1024:.1f}")
        say("target_growth_mb_alloc", f"{(target - dormant) / 1024:.1f}")
        say("agent_peak_rss_mb_alloc", f"{agent / 1024:.1f}")
        _, agent, target = run_peaks([ameba, "run", "-q", "--what-if", "0", "-o", out, "--",
                                      churn], env)
        say("agent_peak_rss_mb_threads", f"{agent / 1024:.1f}")
        say("target_peak_rss_mb_threads", f"{target / 1024:.1f}")


if __name__ == "__main__":
    main()
