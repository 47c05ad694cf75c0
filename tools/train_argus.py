#!/usr/bin/env python
"""Train (or load) every Argus checkpoint of the active profile once, through `latentnb.argus`:
the pre-trained VQ-VAE and VAE, the joint models per λ and variant, and the LeNets under test.

Usage: `LATENTNB_PROFILE=quick LATENTNB_THREADS=1 python tools/train_argus.py [DATASET ...] [--part vq|ablations|lenets]`
(default: mnist fashion-mnist, every part; the ablations only for `[argus_ablations] dataset`).  Notebooks 61/62
then only load these checkpoints.  Training runs on `cfg.device` (a GPU when one is available; `LATENTNB_DEVICE`
overrides).  A checkpoint whose recorded spec differs from the current one (profiles.toml, `ARGUS_CODE`) is retrained.
"""
import argparse, time
from latentnb.config import load_config
from latentnb.argus import load_vqvae, load_argus, load_lenet

ap = argparse.ArgumentParser()
ap.add_argument('datasets', nargs='*', default=['mnist', 'fashion-mnist'])
ap.add_argument('--part', nargs='*', default=['vq', 'ablations', 'lenets'])
a = ap.parse_args()
cfg = load_config()
lambdas = cfg.budget('argus_rq').lambdas
abl = cfg.budget('argus_ablations')
print(cfg, flush=True)
for ds in a.datasets:
    t0 = time.time()
    if 'lenets' in a.part and ds == 'mnist':
        for k in ('lenet4', 'lenet5'): load_lenet(ds, k, cfg=cfg); print(ds, k, f'{time.time()-t0:.0f} s', flush=True)
    if 'vq' in a.part:
        load_vqvae(ds, cfg=cfg); print(ds, 'vqvae', f'{time.time()-t0:.0f} s', flush=True)
        for lam in lambdas: load_argus(ds, lam, 'argus', cfg=cfg); print(ds, 'argus', lam, f'{time.time()-t0:.0f} s', flush=True)
    if 'ablations' in a.part and ds == abl.dataset:
        for v in ('-2D', '-VQ'):
            for lam in abl.lambdas: load_argus(ds, lam, v, cfg=cfg); print(ds, v, lam, f'{time.time()-t0:.0f} s', flush=True)
