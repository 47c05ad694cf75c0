#!/usr/bin/env python
"""Throughput of the DRfuzz-style baseline (latentnb.diffgan.baseline) before and after batching, beside DiffGAN's search, on MNIST pair 1 (not a timed test).

Prints, in one run on the same machine:
  (a) raw judging throughput: the discriminator + both models on batches of the fuzzer's size (images/s);
  (b) the per-image fuzzer of commit --old-commit (before batching, loaded from git): mutants judged/s, evaluations/s;
  (c) the batched fuzzer (latentnb.diffgan.baseline.drfuzz_search): mutants judged/s, evaluations/s, and the ratio to (b);
  (d) DiffGAN's search (latentnb.diffgan.diffgan_search, --search-evals evaluations): evaluations/s;
  (e) mutation alone, no networks: the per-image `mutate` (its 8 rules) against the batched `mutate` (DRfuzz's 15 rules),
      images/s on batches of 500 seeds.
A mutant is *judged* when the discriminator has scored it (and, when it passes the fidelity check, both models have
seen it); an *evaluation* is one input shown to both models. Unique and near-duplicate-free triggering inputs are
printed too, but (b) and (c) differ in method (global τ_D, 8 rules, uniform parents before; DRfuzz's per-seed fidelity,
15 rules, prioritised corpus after), so only the throughput columns compare implementations.
UMAP's one-off numba compile is paid before the search's clock starts. Progress bars are shown only when stdout is
a terminal. The machine's load average is printed before and after: every figure here is CPU-timing sensitive.

Usage: python benchmarks/baseline_throughput.py [--budget 20] [--search-evals 20000] [--profile quick] [--device cpu]
"""
import argparse, importlib.util, os, subprocess, sys, tempfile, time
from pathlib import Path

p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
p.add_argument('--budget', type=float, default=20.0, help='seconds of each fuzzer run (default 20)')
p.add_argument('--search-evals', type=int, default=20000, help="evaluations of DiffGAN's search (default 20,000)")
p.add_argument('--raw-seconds', type=float, default=5.0, help='seconds of the raw throughput measurement')
p.add_argument('--old-commit', default='3abaed6412a49aacb9c5ecbab1e2ee88a56e1036',
               help='git commit holding the per-image latentnb/diffgan/baseline.py (default: the last one before batching)')
p.add_argument('--profile', default=os.environ.get('LATENTNB_PROFILE', 'quick'), help='checkpoints to use (default quick)')
p.add_argument('--device', default=None, help="'cpu', 'cuda', ... (default: automatic)")
p.add_argument('--dataset', default='mnist'); p.add_argument('--pair', type=int, default=1)
args = p.parse_args()
os.environ['LATENTNB_PROFILE'] = args.profile

import numpy as np, torch
import latentnb
from latentnb.config import load_config
from latentnb.generators.gan import load_gan
from latentnb.zoo import load_pair
from latentnb.data import load_dataset
from latentnb.blackbox import as_blackbox
from latentnb.search.fitness import ReclusterPolicy
from latentnb.diffgan import diffgan_search
from latentnb.validity import disc_scores
from latentnb.diffgan.baseline import drfuzz_search
from latentnb.search.mutation import mutate, RULES

cfg = load_config(args.profile, device=args.device)
progress = sys.stdout.isatty()  # no progress bars in logs and pipes
load = lambda: ', '.join(f'{x:.2f}' for x in os.getloadavg())
dev = cfg.device

def old_module():
    "The per-image fuzzer, read from git at --old-commit and imported as latentnb._baseline_old"
    root = Path(latentnb.__file__).parent.parent
    src = subprocess.run(['git', 'show', f'{args.old_commit}:latentnb/diffgan/baseline.py'], cwd=root, capture_output=True, text=True)
    if src.returncode: sys.exit(f"cannot read latentnb/diffgan/baseline.py at {args.old_commit}: {src.stderr.strip()}")
    f = Path(tempfile.mkdtemp())/'_baseline_old.py'; f.write_text(src.stdout)
    from latentnb import diffgan as _s
    from latentnb.search import loop as _st   # the old file imports `_bar` from latentnb.diffgan; it lives in latentnb.search.loop
    if not hasattr(_s, '_bar'): _s._bar = _st._bar
    spec = importlib.util.spec_from_file_location('latentnb._baseline_old', f)
    m = importlib.util.module_from_spec(spec); sys.modules[spec.name] = m; spec.loader.exec_module(m)
    return m

print(f"== baseline throughput, profile {cfg.profile}, device {dev}, torch threads {torch.get_num_threads()}, "
      f"{os.cpu_count()} CPU(s), {args.budget:.0f} s per fuzzer run, load average before {load()}", flush=True)
G, D = load_gan(args.dataset); a, b = load_pair(args.dataset, args.pair)
seeds, _ = load_dataset(args.dataset, 'test')
old = old_module()

# (a) raw: D + both models on batches of 500 images (the batched fuzzer's default batch)
A, Bm = as_blackbox(a, 'A', dev), as_blackbox(b, 'B', dev); D = D.to(dev).eval()
x = seeds[:500].float()
def raw_speed(seconds):
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        disc_scores(D, x, device=dev); A(x); Bm(x); n += len(x)
    return n/(time.perf_counter() - t0)
raw = raw_speed(args.raw_seconds)

with tempfile.TemporaryDirectory() as d:
    kw = dict(budget_s=args.budget, device=dev, resume=False, seed=cfg.seed, progress=progress)
    o = old.drfuzz_search(D, a, b, seeds, out_dir=f'{d}/old', label='per-image', **kw)
    n = drfuzz_search(D, a, b, seeds, out_dir=f'{d}/new', label='batched', **kw)
    S = cfg.budget('search')
    pol = ReclusterPolicy(reducer=S.reducer, n_epochs=S.umap_epochs, max_points=S.max_points)
    s = diffgan_search(G, a, b, budget_s=3600, max_evals=args.search_evals, pop_size=S.pop_size, policy=pol, device=dev,
                       out_dir=f'{d}/s', resume=False, seed=cfg.seed, label='search', progress=progress)

mps = lambda r: r.n_mutants/max(r.seconds, 1e-9)
print(f"(a) raw D + both models: {raw:,.0f} images/s (batches of {len(x)})")
for tag, r in (('(b) per-image fuzzer (before)', o), ('(c) batched fuzzer (after)', n)):
    print(f"{tag}: {mps(r):,.0f} mutants judged/s ({r.n_mutants:,} in {r.seconds:.1f} s, {r.n_rejected:,} rejected), "
          f"{r.evals_per_s:,.0f} evaluations/s, {r.unique:,} unique triggering ({r.near_unique:,} near-duplicate-free)")
print(f"    batched / per-image: {mps(n)/max(mps(o), 1e-9):.1f}x mutants judged/s, {n.evals_per_s/max(o.evals_per_s, 1e-9):.1f}x evaluations/s")
print(f"(d) DiffGAN search: {s.evals_per_s:,.0f} evaluations/s ({s.n_evals:,} in {s.seconds:.1f} s), {s.unique:,} unique triggering "
      f"({s.near_unique:,} near-duplicate-free); batched fuzzer / search = {n.evals_per_s/max(s.evals_per_s, 1e-9):.2f} (evaluations/s)")

def mutation_speed(mut, rules, seconds=2.0):
    "Images mutated per second, cycling through `rules`, batches of 500 seeds"
    rng, n, t0, i = np.random.default_rng(0), 0, time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds: mut(x, rules[i % len(rules)], rng); n += len(x); i += 1
    return n/(time.perf_counter() - t0)
m_old, m_new = mutation_speed(old.mutate, old.RULES), mutation_speed(mutate, RULES)
print(f"(e) mutation alone: per-image {m_old:,.0f} images/s ({len(old.RULES)} rules), batched {m_new:,.0f} images/s "
      f"({len(RULES)} rules): {m_new/m_old:.1f}x")
print(f"load average after: {load()}")
