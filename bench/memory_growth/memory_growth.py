#!/usr/bin/env python3
"""bench/memory_growth: peak memory of the target and the agent (issue 20)

Runs `ameba run --what-if 0` on
  - churn_alloc N (bench/memory_growth/churn_alloc.c, N allocations, at
    most 64 live): target_peak_rss_mb_alloc (the target's VmHWM) and its
    dormant figure (the same program under AMEBA_MRI=0 with no backend
    active: the runtime's own floor), target_growth_mb_alloc (the
    difference; target: under 64 MB at N = 10,000,000);
  - pool_churn 3,000,000 (bench/memory_growth/pool_churn.c: 6 threads
    share a pool of 512 blocks, ~4,500,000 allocations, each block passing
    through several threads): target_growth_mb_pool over its dormant figure;
  - tests' wl_thread_churn (10,000 threads): agent_peak_rss_mb_threads
    (the agent's VmHWM; target: under 128 MB) and target_peak_rss_mb_threads.
Peaks are read from /proc/PID/status (VmHWM) every 50 ms until the process
exits, and the target's once more as it exits (a preload library built
here writes its VmHWM from a destructor); the dormant run's from wait4.

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


def dormant_peak(cmd, env, hook=None):
    """The peak RSS (kB) of cmd, which starts no process: its VmHWM as it
    exits (hook), else wait4's ru_maxrss (which also counts the forking
    python's pages before the exec: a few MB high)."""
    if hook:
        env = dict(env, LD_PRELOAD=hook, MG_HWM_OUT=hook + ".hwm")
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"memory_growth: {' '.join(cmd)} exited with {p.returncode}")
    written = f"{hook}.hwm.{p.pid}" if hook else None
    if written and os.path.exists(written):
        with open(written) as f:
            return int(f.read().split()[0])
    return ru.ru_maxrss


HWM_HOOK = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* At exit: the process's VmHWM (kB) into $MG_HWM_OUT.PID, so that a peak
 * reached in the last moments is not missed between two polls. */
__attribute__((destructor)) static void mg_hwm(void)
{
	const char *out = getenv("MG_HWM_OUT");
	char line[256], path[4096];
	FILE *f, *o;

	if (!out || !(f = fopen("/proc/self/status", "r")))
		return;
	snprintf(path, sizeof(path), "%s.%d", out, (int)getpid());
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6) && (o = fopen(path, "w"))) {
			fputs(line + 6, o);
			fclose(o);
		}
	fclose(f);
}
"""


def hwm_hook(tmp):
    """A preload library that writes the process's VmHWM at exit (None
    without a C compiler: the polled peaks only)."""
    src, lib = os.path.join(tmp, "mg_hwm.c"), os.path.join(tmp, "mg_hwm.so")
    with open(src, "w") as f:
        f.write(HWM_HOOK)
    ok = subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", lib, src]).returncode == 0
    return lib if ok else None


def run_peaks(cmd, env, hook=None):
    """Runs cmd; returns (exit status, its own peak kB, its first child's peak
    kB: polled, or with hook the child's own figure at its exit)."""
    out = None
    if hook:
        out = hook + ".hwm"
        env = dict(env, LD_PRELOAD=hook, MG_HWM_OUT=out)
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
    if out and kid is not None and os.path.exists(f"{out}.{kid}"):
        with open(f"{out}.{kid}") as f:
            child = max(child, int(f.read().split()[0]))
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
        hook = hwm_hook(tmp)
        dormant = dormant_peak([prog, n], dict(env, AMEBA_MRI="0"), hook)
        _, agent, target = run_peaks([ameba, "run", "-q", "--what-if", "0", "-o", out, "--",
                                      prog, n], env, hook)
        say("allocations", n)
        say("target_dormant_rss_mb_alloc", f"{dormant / 1024:.1f}")
        say("target_peak_rss_mb_alloc", f"{target / 1024:.1f}")
        say("target_growth_mb_alloc", f"{(target - dormant) / 1024:.1f}")
        say("agent_peak_rss_mb_alloc", f"{agent / 1024:.1f}")
        pool = [os.path.join(build, "bench", "memory_growth", "pool_churn"), "3000000"]
        dormant = dormant_peak(pool, dict(env, AMEBA_MRI="0"), hook)
        _, agent, target = run_peaks([ameba, "run", "-q", "--what-if", "0", "-o", out, "--"] +
                                     pool, env, hook)
        say("target_dormant_rss_mb_pool", f"{dormant / 1024:.1f}")
        say("target_growth_mb_pool", f"{(target - dormant) / 1024:.1f}")
        say("agent_peak_rss_mb_pool", f"{agent / 1024:.1f}")
        _, agent, target = run_peaks([ameba, "run", "-q", "--what-if", "0", "-o", out, "--",
                                      churn], env, hook)
        say("agent_peak_rss_mb_threads", f"{agent / 1024:.1f}")
        say("target_peak_rss_mb_threads", f"{target / 1024:.1f}")


if __name__ == "__main__":
    main()
