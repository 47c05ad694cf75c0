#!/usr/bin/env python
"""Train (or load) every Argus checkpoint of the active profile once, through `latentnb.argus`:
the pre-trained VQ-VAE and VAE, the joint models per λ and variant, and the LeNets under test.

Usage: `LATENTNB_PROFILE=quick LATENTNB_THREADS=1 python tools/train_argus.py [DATASET ...] [--part vq|ablations|lenets|sweep]`
(default: mnist fashion-mnist, every part but `sweep`; the ablations only for `[argus_ablations] dataset`).  Notebooks 61/62
then only load these checkpoints.  Training runs on `cfg.device` (a GPU when one is available; `LATENTNB_DEVICE`
overrides).  A checkpoint whose recorded spec differs from the current one (profiles.toml, `ARGUS_CODE`) is retrained.

`--part sweep [--configs NAME ...]`: the reconstruction diagnosis that chose `[argus] n_res` and the schedule: VQ-VAEs of the
profile's `[argus]` settings with one change each (residual blocks, the epoch of the lr decay), pre-trained on the first
`n_train − 1000` training images and measured (`recon_fidelity`) on the **last 1,000 training images**, which no table uses
(MNIST here has 7,001 training images, so these are not among the first `n_train`).  Each result is appended to
`data/argus/recon_sweep.<profile>.json` (60_argus prints it); no checkpoint is written.
"""
import argparse, json, time
from pathlib import Path
import torch
from latentnb.config import load_config
from latentnb.data import load_dataset
from latentnb.argus import load_vqvae, load_argus, load_lenet, VQVAE, train_argus, recon_fidelity

SWEEP = {   # name: (n_res, epoch of the first lr decay as a share of the epochs), every other setting from [argus]
    'plain, decay at 40 %': (0, 0.4), 'plain, decay at 80 %': (0, 0.8),
    '2 residual blocks, decay at 40 %': (2, 0.4), '2 residual blocks, decay at 80 %': (2, 0.8)}

def sweep(ds, names, cfg):
    B = cfg.budget('argus'); x, y = load_dataset(ds, 'train')
    n_fit = B.n_train - 1000; xho = x[-1000:]
    assert n_fit <= len(x) - 1000, 'the training images must not reach the last 1,000'
    out = Path(__file__).resolve().parent.parent/'data'/'argus'/f'recon_sweep.{cfg.profile}.json'; out.parent.mkdir(exist_ok=True)
    for name in names:
        n_res, frac = SWEEP[name]
        torch.manual_seed(0); m = VQVAE(B.n_codes, B.code_dim, B.beta, B.width, B.down, n_res)
        t0 = time.time()
        logs = train_argus(m, x[:n_fit], y[:n_fit], epochs=B.pre_epochs, adversarial=False, lr=B.lr, bs=B.bs, seed=cfg.seed,
                           lr_step=max(1, round(frac*B.pre_epochs)), lr_gamma=B.lr_gamma, progress=False)
        r = dict(dataset=ds, config=name, n_res=n_res, lr_step=max(1, round(frac*B.pre_epochs)), epochs=B.pre_epochs, n_fit=n_fit,
                 n_heldout=len(xho), train_seconds=round(time.time() - t0, 1), train_rec=logs['rec'],
                 params=sum(p.numel() for p in m.parameters()), **recon_fidelity(m, xho))
        rows = json.loads(out.read_text()) if out.exists() else []        # re-read: another process may have added rows
        rows = [q for q in rows if (q['dataset'], q['config']) != (ds, name)] + [r]
        out.write_text(json.dumps(rows, indent=1)); print(json.dumps(r), flush=True)

ap = argparse.ArgumentParser()
ap.add_argument('datasets', nargs='*', default=['mnist', 'fashion-mnist'])
ap.add_argument('--part', nargs='*', default=['vq', 'ablations', 'lenets'])
ap.add_argument('--configs', nargs='*', default=list(SWEEP))
a = ap.parse_args()
cfg = load_config()
lambdas = cfg.budget('argus_rq').lambdas
abl = cfg.budget('argus_ablations')
print(cfg, flush=True)
for ds in a.datasets:
    t0 = time.time()
    if 'sweep' in a.part: sweep(ds, a.configs, cfg)
    if 'lenets' in a.part and ds == 'mnist':
        for k in ('lenet4', 'lenet5'): load_lenet(ds, k, cfg=cfg); print(ds, k, f'{time.time()-t0:.0f} s', flush=True)
    if 'vq' in a.part:
        load_vqvae(ds, cfg=cfg); print(ds, 'vqvae', f'{time.time()-t0:.0f} s', flush=True)
        for lam in lambdas: load_argus(ds, lam, 'argus', cfg=cfg); print(ds, 'argus', lam, f'{time.time()-t0:.0f} s', flush=True)
    if 'ablations' in a.part and ds == abl.dataset:
        for v in ('-2D', '-VQ'):
            for lam in abl.lambdas: load_argus(ds, lam, v, cfg=cfg); print(ds, v, lam, f'{time.time()-t0:.0f} s', flush=True)
