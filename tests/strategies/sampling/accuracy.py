#!/usr/bin/env python3
# accuracy.py - the share error of the `sampling` strategy against the
# oracle on one workload (the figures of docs/strategies.md, section sampling).
#
#   usage: accuracy.py AMEBA TEST_BIN WORKLOAD SCALE PERIOD RANDOM [INTERVAL_MS]
#   e.g.   accuracy.py build/bin/ameba build/tests/bin hot_arrays 1 10007 1
#
# Runs TEST_BIN/wl_WORKLOAD SCALE once with AMEBA_ORACLE (sim backend) and
# once under `ameba run --strategy sampling:period=PERIOD,random=RANDOM`,
# then prints, for every bin with at least 2% of the l1d_miss, the oracle's
# share / the reported share / the pure-sample share (value over the sum of
# the reported values), and the largest errors in points. Not a test: the
# error is statistical (see the doc).
import json, os, shutil, subprocess, sys, tempfile
ameba, binp, wl, scale, period, rnd = sys.argv[1:7]
interval = sys.argv[7] if len(sys.argv) > 7 else None
d = tempfile.mkdtemp(prefix='ameba-sampling-acc-')
env = dict(os.environ, AMEBA_BACKEND='sim')
orc = os.path.join(d, 'o.json')
subprocess.run([os.path.join(binp, 'wl_' + wl), scale], env=dict(env, AMEBA_ORACLE=orc), stdout=subprocess.DEVNULL, check=True)
o = json.load(open(orc))
m = 'l1d_miss'
bins = {b['name']: b['total'].get(m, 0) for b in o['bins']}
tot = sum(bins.values())
cmd = [ameba, 'run', '-q', '--strategy', 'sampling:period=%s,random=%s' % (period, rnd), '-o', os.path.join(d, 'r.json')]
if interval: cmd += ['--interval', interval + 'ms']
cmd += ['--', os.path.join(binp, 'wl_' + wl), scale]
subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r = json.load(open(os.path.join(d, 'r.json')))
est = {x['name']: x['share'] for x in r['objects']}
vals = {x['name']: x['totals'].get(m, 0) for x in r['objects']}
vs = sum(vals.values())
rows = sorted(bins.items(), key=lambda kv: -kv[1])
maxe = maxp = 0
out = []
for name, v in rows:
    share = v / tot
    if share < 0.02: continue
    e = est.get(name, 0.0); p = vals.get(name, 0.0) / vs if vs else 0
    maxe = max(maxe, abs(e - share)); maxp = max(maxp, abs(p - share))
    out.append('%s %.2f/%.2f/%.2f' % (name.split('@')[0], 100*share, 100*e, 100*p))
mp = (int(period)//2 + int(period)/2.0) if rnd == '1' else float(period)
shutil.rmtree(d)
print('%s scale=%s period=%s random=%s: samples %d max_err_pts %.2f (pure-sample %.2f) window %.3f of oracle total [%s]' % (wl, scale, period, rnd, round(vs/mp), 100*maxe, 100*maxp, r['totals'][m]/tot, ' '.join(out)), flush=True)
