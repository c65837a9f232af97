#!/usr/bin/env python3
"""memo_sweep.py: how far `trainsim predict --memo 1` lands from the live
flow-level run, over random plans.

Draws plans from a seeded generator (models qwen3-30b-a3b, qwen3-vl-30b-a3b,
qwen3-vl-8b, qwen3-vl-2b and examples/models/gpt2.json; 2, 4 or 8 nodes of
dgx-h100-ndr or dgx-h100-ndr-fat-tree; random tp, pp, ep, ZeRO stage or the
distributed optimizer, sequence parallelism, interleaving, recompute, expert
imbalance, sequence length, micro-batch and seed; flash attention), skips
those the live run refuses (exit 1 or 2: too many GPUs, out of memory, plan
rules), and predicts each kept plan live (`--memo 0`) and memoised. Prints a
row per plan (memo / live - 1, times and wall seconds) and the summary: the
largest and mean absolute difference, the plans over 0.5 % and 1 %, the
wall time of all. With --compare BIN, the memoised run of another build too
(e.g. one from before a change) in the second column. Needs only python3
and a built trainsim.

  validate/memo_sweep.py [--trainsim BIN] [--compare BIN] [--seed S] [--plans N]
"""
import argparse
import json
import random
import statistics
import subprocess
import sys
import time

MODELS = [('qwen3-30b-a3b', True), ('qwen3-vl-30b-a3b', True), ('qwen3-vl-8b', False),
          ('qwen3-vl-2b', False), ('examples/models/gpt2.json', False)]


def predict(binary, args, memo):
    """Iteration time (None when refused) and wall seconds."""
    t0 = time.time()
    p = subprocess.run([binary, 'predict'] + args + ['--memo', str(memo), '--json'],
                       capture_output=True, text=True, timeout=600)
    wall = time.time() - t0
    if p.returncode != 0:
        return None, wall
    return json.loads(p.stdout)['iteration_time_s'], wall


def draw(rng):
    """One random plan's arguments, or None when its shape does not divide."""
    model, moe = rng.choice(MODELS)
    nodes = rng.choice([2, 4, 8])
    tp = rng.choice([1, 2, 4, 8])
    pp = rng.choice([1, 2, 4])
    if nodes * 8 % (tp * pp):
        return None
    dp = nodes * 8 // (tp * pp)
    micro = rng.choice([1, 2])
    args = ['--cluster', rng.choice(['dgx-h100-ndr', 'dgx-h100-ndr-fat-tree']),
            '--nodes', str(nodes), '--model', model, '--tp', str(tp), '--pp', str(pp),
            '--seq-len', str(rng.choice([1024, 2048, 4096])), '--micro-batch', str(micro),
            '--seed', str(rng.randint(1, 9))]
    args += ['--global-batch', str(dp * rng.choice([1, 2, 4, 8]) * micro)]
    if moe:
        ep = rng.choice([e for e in [1, 2, 4, 8, 16, 32] if dp * tp % e == 0 and e <= dp * tp])
        args += ['--ep', str(ep), '--expert-imbalance', str(rng.choice([0, 0.5, 1, 3]))]
    zero = rng.choice([0, 0, 1, 2, 3])
    if zero:
        args += ['--zero', str(zero)]
    elif rng.random() < 0.5:
        args += ['--distributed-optimizer']
    if tp > 1 and rng.random() < 0.5:
        args += ['--sequence-parallel']
    if pp > 1 and rng.random() < 0.3:
        args += ['--schedule', 'interleaved', '--virtual-stages', '2']
    args += ['--recompute', rng.choice(['none', 'selective', 'full']), '--flash-attention']
    return args


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--trainsim', default='build/trainsim')
    ap.add_argument('--compare', help='another build whose --memo 1 runs the same plans')
    ap.add_argument('--seed', type=int, default=23)
    ap.add_argument('--plans', type=int, default=60)
    a = ap.parse_args()
    if a.plans < 1:
        ap.error('--plans must be at least 1')
    rng = random.Random(a.seed)
    dev, cmp_dev = [], []
    wall = {'live': 0.0, 'memo': 0.0, 'compare': 0.0}
    print('memo-live  %s| live_s     wall  memo_s     wall  | plan' %
          ('cmp-live  ' if a.compare else ''))
    while len(dev) < a.plans:
        args = draw(rng)
        if args is None:
            continue
        live, wl = predict(a.trainsim, args, 0)
        if live is None:
            continue
        memo, wm = predict(a.trainsim, args, 1)
        if memo is None:
            sys.exit('memo_sweep: --memo 1 refused a plan the live run took: ' + ' '.join(args))
        wall['live'] += wl
        wall['memo'] += wm
        dev.append(100 * (memo / live - 1))
        col = ''
        if a.compare:
            other, wc = predict(a.compare, args, 1)
            if other is None:
                sys.exit('memo_sweep: --compare refused a plan: ' + ' '.join(args))
            wall['compare'] += wc
            cmp_dev.append(100 * (other / live - 1))
            col = '%+7.2f %%  ' % cmp_dev[-1]
        print('%+7.2f %%  %s| %.4f %6.1f  %.4f %6.1f  | %s' %
              (dev[-1], col, live, wl, memo, wm, ' '.join(args)), flush=True)

    def summary(name, d, w):
        ab = [abs(v) for v in d]
        print('# %s: %d plans, max |memo/live - 1| %.2f %%, mean %.3f %%, over 0.5 %% %d, '
              'over 1 %% %d; wall %.1f s (live %.1f s)' %
              (name, len(d), max(ab), statistics.mean(ab), sum(v > 0.5 for v in ab),
               sum(v > 1 for v in ab), w, wall['live']))
    summary(a.trainsim, dev, wall['memo'])
    if a.compare:
        summary(a.compare, cmp_dev, wall['compare'])


if __name__ == '__main__':
    main()
