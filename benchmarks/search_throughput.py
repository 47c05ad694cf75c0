#!/usr/bin/env python
"""Throughput of DiffGAN's NSGA-II search (latentnb.diffgan) on MNIST pair 1 (not a timed test).

Prints, in one run on the same machine:
  (a) raw throughput of generator + both models on batches of the search's size (images/s), in three windows: before,
      between and after the two searches;
  (b) the search's evaluations/s and its ratio to (a)'s fastest window (target >= 0.9, issue 41), to the mean of the two
      windows beside it (the machine's speed drifts within minutes), and to the raw speed of the same calls measured inside
      the run (its share of wall time spent evaluating: robust to a shared, loaded CPU);
  (c) unique triggering inputs per 1,000 evaluations, search vs random latent sampling, and ratio (target >= 3);
  (d) unique triggering inputs per minute of the search            (target >= 1,700/min on a 2-core CPU);
  (e) near-duplicate-free triggering inputs per minute, search vs random sampling (target >= 3, issue 41);
  (f) where the search's time went: evaluating, NSGA-II's ask and tell, clustering, the rest (archive, history).
The same figures follow for the search with our novelty fitness (`fitness=('novelty',)`, notebook 21) in place of the
paper's divergence and diversity: the library's option for near-duplicate-free failures, not the paper's method.
UMAP's one-off numba compile is paid before any timing (latentnb.search.fitness.warm_up; the search would also pay it
outside its budget by itself). Progress bars are shown only when stdout is a terminal. The machine's load average is
printed before and after: every figure here is CPU-timing sensitive.

Usage: python benchmarks/search_throughput.py [--budget 60] [--raw-seconds 10] [--profile quick] [--device cpu]
"""
import argparse, os, sys, tempfile, time

p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
p.add_argument('--budget', type=float, default=60.0, help='seconds of search and of random sampling (default 60)')
p.add_argument('--raw-seconds', type=float, default=10.0, help='seconds of the raw throughput measurement')
p.add_argument('--profile', default=os.environ.get('LATENTNB_PROFILE', 'quick'), help='checkpoints to use (default quick)')
p.add_argument('--device', default=None, help="'cpu', 'cuda', ... (default: automatic)")
p.add_argument('--dataset', default='mnist'); p.add_argument('--pair', type=int, default=1)
p.add_argument('--seed-images', type=int, default=None,
               help="real test images seeding the representatives (default: the profile's n_seed_images)")
args = p.parse_args()
os.environ['LATENTNB_PROFILE'] = args.profile

import numpy as np, torch
from latentnb.config import load_config
from latentnb.generators.gan import load_gan
from latentnb.zoo import load_pair
from latentnb.data import load_dataset
from latentnb.blackbox import as_blackbox
from latentnb.search.fitness import ReclusterPolicy, warm_up
from latentnb.diffgan import diffgan_search, random_search
from latentnb.search import Batch, objective, search_space
from latentnb.search.loop import _evaluate

cfg = load_config(args.profile, device=args.device)
progress = sys.stdout.isatty()  # no progress bars in logs and pipes
load = lambda: ', '.join(f'{x:.2f}' for x in os.getloadavg())
B = cfg.budget('search')
dev = cfg.device
print(f"== search throughput, profile {cfg.profile}, device {dev}, torch threads {torch.get_num_threads()}, "
      f"{os.cpu_count()} CPU(s), budget {args.budget:.0f} s per run, load average before {load()}", flush=True)
G, _ = load_gan(args.dataset); a, b = load_pair(args.dataset, args.pair)
G = G.to(dev).eval(); A, Bm = as_blackbox(a, 'A', dev), as_blackbox(b, 'B', dev)
print(f"{B.reducer} warm-up (numba compile, excluded): {warm_up(B.reducer, B.umap_epochs):.1f} s", flush=True)

# (a) raw throughput: generator + both models on batches of the search's size, in a window before, between and after the
# two searches. A machine's speed drifts within a minute (earlier runs: 1,419 -> 1,516 and 1,455 -> 989 images/s between
# two windows a few minutes apart), so each search is compared with the mean of the two windows on either side of it.
# The space and the objective are built once, as a search builds them, so that a window times what a search's generation
# evaluates (decode, quantise to 8 bits, both models) and nothing else (`evaluate_latents` builds both on every call).
rng = np.random.default_rng(0)
sp, obj = search_space(G), objective('differential', A, Bm, device=dev)
_evaluate(sp, obj, Batch(rng.uniform(-1, 1, (B.pop_size, 100))))
def raw_speed(seconds):
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        _evaluate(sp, obj, Batch(rng.uniform(-1, 1, (B.pop_size, 100)))); n += B.pop_size
    if dev.type == 'cuda': torch.cuda.synchronize()
    return n/(time.perf_counter() - t0)
raw_before = raw_speed(args.raw_seconds/2)

# (b), (d) the search; (c) against random sampling at the same budget
pol = ReclusterPolicy(reducer=B.reducer, n_epochs=B.umap_epochs, max_points=B.max_points)
with tempfile.TemporaryDirectory() as d:
    n_real = B.n_seed_images if args.seed_images is None else args.seed_images
    real = load_dataset(args.dataset, 'test', n=n_real)[0] if n_real else None
    s = diffgan_search(G, a, b, budget_s=args.budget, pop_size=B.pop_size, policy=pol, device=dev, out_dir=f'{d}/s',
                       resume=False, seed=cfg.seed, label='search', progress=progress, seed_images=real)
    raw_between = raw_speed(args.raw_seconds/2)
    nv = diffgan_search(G, a, b, budget_s=args.budget, pop_size=B.pop_size, fitness=('novelty',), device=dev,
                        out_dir=f'{d}/n', resume=False, seed=cfg.seed, label='novelty', progress=progress)
    raw_after = raw_speed(args.raw_seconds/2)
    r = random_search(G, a, b, budget_s=args.budget, batch=B.pop_size, device=dev, out_dir=f'{d}/r', seed=cfg.seed,
                      progress=progress)
raw = max(raw_before, raw_between, raw_after)

print(f"(a) raw generator + both models: {raw:,.0f} images/s at most (batches of {B.pop_size}; {raw_before:,.0f} before the "
      f"searches, {raw_between:,.0f} between them, {raw_after:,.0f} after)")

def report(s, name, adj):
    "Figures (b) to (f) of one search against random sampling `r`; `adj`: the mean raw speed of the windows beside it"
    rest = s.session_seconds - s.eval_seconds - s.cluster_seconds
    print(f"== {name}")
    print(f"(b) search: {s.evals_per_s:,.0f} evaluations/s ({s.n_evals:,} in {s.seconds:.1f} s; clustering {s.cluster_seconds:.1f} s "
          f"in {s.n_clusterings} re-clusterings + the seed images'); ratio to raw (a) = {s.evals_per_s/raw:.2f} (target >= 0.9)")
    print(f"    ratio to the mean of the two raw windows beside it ({adj:,.0f} images/s) = {s.evals_per_s/adj:.2f} (target >= 0.9)")
    print(f"    ratio to the raw speed of the same generator + model calls inside the run (same moments, same load) = "
          f"{s.eval_share:.2f} (target >= 0.9; robust to CPU contention); random sampling {r.evals_per_s:,.0f} evaluations/s, "
          f"search/random = {s.evals_per_s/r.evals_per_s:.2f}")
    print(f"(c) unique triggering per 1,000 evaluations: search {s.trig_per_1000:.1f}, random {r.trig_per_1000:.1f} "
          f"({r.n_evals:,} evaluations); ratio = {s.trig_per_1000/max(r.trig_per_1000, 1e-9):.2f} (target >= 3)")
    print(f"(d) unique triggering inputs per minute ({args.dataset} pair {args.pair}): {s.unique_per_min:,.0f}/min "
          f"({s.unique:,} unique; target >= 1,700/min on a 2-core CPU; paper ~83/min)")
    print(f"(e) near-duplicate-free triggering inputs per minute: search {60*s.near_unique/s.seconds:,.0f}/min ({s.near_unique:,}), "
          f"random sampling {60*r.near_unique/r.seconds:,.0f}/min ({r.near_unique:,}); "
          f"ratio = {(s.near_unique/s.seconds)/max(r.near_unique/r.seconds, 1e-9):.2f} (target >= 3)")
    print(f"(f) search wall time {s.session_seconds:.1f} s: evaluating {s.eval_seconds:.1f} s, clustering {s.cluster_seconds:.1f} s, "
          f"NSGA-II ask + tell, archive, history {rest:.1f} s ({1000*rest/max(s.n_gen, 1):.1f} ms per generation of {B.pop_size})")

report(s, "DiffGAN as published (divergence and diversity)", (raw_before + raw_between)/2)
report(nv, "the same search with our novelty fitness (fitness=('novelty',))", (raw_between + raw_after)/2)
print(f"load average after: {load()}")
