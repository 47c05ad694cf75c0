#!/usr/bin/env python
"""Throughput of DiffGAN's NSGA-II search (latentnb.search) on MNIST pair 1 (not a timed test).

Prints, in one run on the same machine:
  (a) raw throughput of generator + both models on batches of the search's size (images/s);
  (b) the search's evaluations/s and its ratio to (a)            (target >= 0.8);
  (c) unique triggering inputs per 1,000 evaluations, search vs random latent sampling, and ratio (target >= 3);
  (d) unique triggering inputs per minute of the search            (target >= 1,700/min on a 2-core CPU),
      with the near-duplicate-free count beside it.
UMAP's one-off numba compile is paid before any timing (latentnb.fitness.warm_up).

Usage: python benchmarks/search_throughput.py [--budget 60] [--raw-seconds 10] [--profile quick] [--device cpu]
"""
import argparse, os, sys, tempfile, time

p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
p.add_argument('--budget', type=float, default=60.0, help='seconds of search and of random sampling (default 60)')
p.add_argument('--raw-seconds', type=float, default=10.0, help='seconds of the raw throughput measurement')
p.add_argument('--profile', default=os.environ.get('LATENTNB_PROFILE', 'quick'), help='checkpoints to use (default quick)')
p.add_argument('--device', default=None, help="'cpu', 'cuda', ... (default: automatic)")
p.add_argument('--dataset', default='mnist'); p.add_argument('--pair', type=int, default=1)
args = p.parse_args()
os.environ['LATENTNB_PROFILE'] = args.profile

import numpy as np, torch
from latentnb.config import load_config
from latentnb.gan import load_gan
from latentnb.zoo import load_pair
from latentnb.blackbox import as_blackbox
from latentnb.fitness import ReclusterPolicy, warm_up
from latentnb.search import diffgan_search, evaluate_latents, random_search

cfg = load_config(args.profile, device=args.device)
B = cfg.budget('search')
dev = cfg.device
print(f"== search throughput, profile {cfg.profile}, device {dev}, torch threads {torch.get_num_threads()}, "
      f"{os.cpu_count()} CPU(s), budget {args.budget:.0f} s per run", flush=True)
G, _ = load_gan(args.dataset); a, b = load_pair(args.dataset, args.pair)
G = G.to(dev).eval(); A, Bm = as_blackbox(a, 'A', dev), as_blackbox(b, 'B', dev)
print(f"{B.reducer} warm-up (numba compile, excluded): {warm_up(B.reducer, B.umap_epochs):.1f} s", flush=True)

# (a) raw throughput: generator + both models on batches of 100 latent vectors
rng = np.random.default_rng(0)
evaluate_latents(G, A, Bm, rng.uniform(-1, 1, (B.pop_size, 100)), dev)
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < args.raw_seconds:
    evaluate_latents(G, A, Bm, rng.uniform(-1, 1, (B.pop_size, 100)), dev); n += B.pop_size
if dev.type == 'cuda': torch.cuda.synchronize()
raw = n/(time.perf_counter() - t0)

# (b), (d) the search; (c) against random sampling at the same budget
pol = ReclusterPolicy(reducer=B.reducer, n_epochs=B.umap_epochs, max_points=B.max_points)
with tempfile.TemporaryDirectory() as d:
    s = diffgan_search(G, a, b, budget_s=args.budget, pop_size=B.pop_size, policy=pol, device=dev, out_dir=f'{d}/s',
                       resume=False, seed=cfg.seed, label='search')
    r = random_search(G, a, b, budget_s=args.budget, batch=B.pop_size, device=dev, out_dir=f'{d}/r', seed=cfg.seed)

print(f"(a) raw generator + both models: {raw:,.0f} images/s (batches of {B.pop_size})")
print(f"(b) search: {s.evals_per_s:,.0f} evaluations/s ({s.n_evals:,} in {s.seconds:.1f} s; clustering {s.cluster_seconds:.1f} s "
      f"in {s.n_clusterings} runs); ratio to raw = {s.evals_per_s/raw:.2f} (target >= 0.8)")
print(f"    same-run view, robust to CPU contention: share of the search's wall time spent evaluating = {s.eval_share:.2f}; "
      f"random sampling {r.evals_per_s:,.0f} evaluations/s, search/random = {s.evals_per_s/r.evals_per_s:.2f}")
print(f"(c) unique triggering per 1,000 evaluations: search {s.trig_per_1000:.1f}, random {r.trig_per_1000:.1f} "
      f"({r.n_evals:,} evaluations); ratio = {s.trig_per_1000/max(r.trig_per_1000, 1e-9):.2f} (target >= 3)")
print(f"(d) unique triggering inputs per minute ({args.dataset} pair {args.pair}): {s.unique_per_min:,.0f}/min "
      f"({s.unique:,} unique, {s.near_unique:,} near-duplicate-free = {60*s.near_unique/s.seconds:,.0f}/min; "
      f"target >= 1,700/min on a 2-core CPU; paper ~83/min)")
