#!/usr/bin/env python
"""Train (or load) every Argus checkpoint of the active profile once, through `latentnb.argus`:
the pre-trained VQ-VAE and VAE, the joint models per λ and variant, and the classifiers under test (`--part lenets`: MNIST's LeNets; on 3×32×32 datasets the zoo's VGG16 and ResNet18).

Usage: `LATENTNB_PROFILE=quick LATENTNB_THREADS=1 python tools/train_argus.py [DATASET ...] [--part vq|ablations|lenets|sweep]`
(default: mnist fashion-mnist, every part but `sweep`; the ablations only for `[argus_ablations] dataset`).  Any dataset of a
shape Argus builds for works (e.g. colour-mnist or cifar10, 3×32×32: the models build for `dataset_info(dataset).shape`).  Notebooks 61/62
then only load these checkpoints.  Training runs on `cfg.device` (a GPU when one is available; `LATENTNB_DEVICE`
overrides).  A checkpoint whose recorded spec differs from the current one (profiles.toml, `ARGUS_CODE`) is retrained.

`--part sweep [--configs NAME ...]`: the reconstruction diagnosis that chose `[argus] n_res` and the schedule: VQ-VAEs of the
profile's `[argus]` settings with one change each (residual blocks, the epoch of the lr decay), pre-trained on the first
`n_train − 1000` training images and measured (`recon_fidelity`) on the **last 1,000 training images**, which no table uses
(MNIST here has 7,001 training images, so these are not among the first `n_train`).  Each result is appended to
`data/argus/recon_sweep.<profile>.json` (60_argus prints it); no checkpoint is written.

`--part tune`: the choice of `[argus] w_adv`, the weight of the adversarial losses, for Argus and for its '-VQ' ablation
by one rule on one split that no table uses.  For each variant: the bottleneck pre-trained on the first `n_train − 1000`
training images, then jointly trained at λ = 0.2 (the ablation table's λ) with each `w_adv` of `latentnb.argus.W_ADV_GRID`; each candidate
generates from 100 seeds of the **last 1,000 training images** (partners from the same 1,000, 9 × 6 per seed) against the
LeNets under test.  The rule, fixed before the runs, is `latentnb.argus.choose_w_adv`: the highest net error rate (mean over the LeNets)
among the candidates whose inputs' mean SSIM to their seeds is within `W_ADV_SSIM_TOL` of the best candidate's.  Rows are appended to
`data/argus/w_adv_tuning.<profile>.json` as they finish (a rerun skips finished rows); 60_argus prints them.
"""
import argparse, json, time
from pathlib import Path
import torch
from latentnb.config import load_config
from latentnb.data import load_dataset
from latentnb.argus.core import (load_vqvae, load_argus, VQVAE, train_argus, recon_fidelity, argus_eval, argus_seeds,
                                 argus_classifiers, CKPT_TAG, _build, _img_shape, _lr_step, W_ADV_GRID as TUNE_W, W_ADV_LAM as TUNE_LAM)

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
        torch.manual_seed(0); m = VQVAE(B.n_codes, B.code_dim, B.beta, B.width, B.down, n_res, _img_shape(ds))
        t0 = time.time()
        logs = train_argus(m, x[:n_fit], y[:n_fit], epochs=B.pre_epochs, adversarial=False, lr=B.lr, bs=B.bs, seed=cfg.seed,
                           lr_step=max(1, round(frac*B.pre_epochs)), lr_gamma=B.lr_gamma, progress=False)
        r = dict(dataset=ds, config=name, n_res=n_res, lr_step=max(1, round(frac*B.pre_epochs)), epochs=B.pre_epochs, n_fit=n_fit,
                 n_heldout=len(xho), train_seconds=round(time.time() - t0, 1), train_rec=logs['rec'],
                 params=sum(p.numel() for p in m.parameters()), **recon_fidelity(m, xho))
        rows = json.loads(out.read_text()) if out.exists() else []        # re-read: another process may have added rows
        rows = [q for q in rows if (q['dataset'], q['config']) != (ds, name)] + [r]
        out.write_text(json.dumps(rows, indent=1)); print(json.dumps(r), flush=True)


def tune(ds, cfg, variants=('argus', '-VQ')):
    B = cfg.budget('argus'); x, y = load_dataset(ds, 'train')
    n_fit = B.n_train - 1000
    if not 0 < n_fit <= len(x) - 1000: raise ValueError(f"--part tune needs 1,000 < [argus] n_train <= {len(x)} (got {B.n_train}): it holds the last 1,000 out")
    xf, yf, xho, yho = x[:n_fit], y[:n_fit], x[-1000:], y[-1000:]
    out = Path(__file__).resolve().parent.parent/'data'/'argus'/f'w_adv_tuning.{cfg.profile}.json'; out.parent.mkdir(exist_ok=True)
    clfs = argus_classifiers(ds, cfg); xs, ys = argus_seeds((xho, yho), 100, cfg.seed)
    for variant in variants:
        kind = 'vae' if variant == '-VQ' else 'vq'
        done = {(q['dataset'], q['variant'], q['w_adv']) for q in (json.loads(out.read_text()) if out.exists() else [])}
        if all((ds, variant, w) in done for w in TUNE_W): continue
        t0 = time.time(); base = _build(kind, B, _img_shape(ds))
        train_argus(base, xf, yf, epochs=B.pre_epochs, adversarial=False, lr=B.lr, bs=B.bs, seed=cfg.seed,
                    lr_step=_lr_step(B.pre_epochs, B.pre_lr_step_frac), lr_gamma=B.lr_gamma, progress=False)
        pre_s = round(time.time() - t0, 1)
        for w in TUNE_W:
            if (ds, variant, w) in done: continue
            t0 = time.time(); m = __import__('copy').deepcopy(base)
            train_argus(m, xf, yf, lam=TUNE_LAM, epochs=B.joint_epochs, adversarial=True, lr=B.joint_lr, bs=B.bs, w_adv=w, seed=cfg.seed,
                        lr_step=_lr_step(B.joint_epochs, B.lr_step_frac), lr_gamma=B.lr_gamma, progress=False)
            ev = argus_eval(m, clfs, xs, ys, xho, yho, lam=TUNE_LAM, n_partners=6, seed=cfg.seed)
            r = dict(dataset=ds, variant=variant, w_adv=w, lam=TUNE_LAM, n_fit=n_fit, n_heldout=len(xho), n_seeds=len(ys),
                     pre_seconds=pre_s, joint_seconds=round(time.time() - t0, 1),
                     **{f'{k}:{n}': float(v) for n, mt in ev['metrics'].items() for k, v in mt.items()
                        if k in ('error_rate', 'error_rate_net', 'ssim', 'mse', 'recon_error', 'label_diversity_net')})
            rows = json.loads(out.read_text()) if out.exists() else []        # re-read: another process may have added rows
            rows = [q for q in rows if (q['dataset'], q['variant'], q['w_adv']) != (ds, variant, w)] + [r]
            out.write_text(json.dumps(rows, indent=1)); print(json.dumps(r), flush=True)

ap = argparse.ArgumentParser()
ap.add_argument('datasets', nargs='*', default=['mnist', 'fashion-mnist'])
ap.add_argument('--part', nargs='*', default=['vq', 'ablations', 'lenets'])
ap.add_argument('--configs', nargs='*', default=list(SWEEP))
ap.add_argument('--variants', nargs='*', default=['argus', 'novq'], choices=['argus', 'novq'])   # --part tune: checkpoint tags
a = ap.parse_args()
cfg = load_config()
lambdas = cfg.budget('argus_rq').lambdas
abl = cfg.budget('argus_ablations')
print(cfg, flush=True)
for ds in a.datasets:
    t0 = time.time()
    if 'sweep' in a.part: sweep(ds, a.configs, cfg)
    if 'tune' in a.part: tune(ds, cfg, [{t: v for v, t in CKPT_TAG.items()}[t] for t in a.variants])
    if 'lenets' in a.part and (ds == 'mnist' or _img_shape(ds) == (3, 32, 32)):   # the classifiers under test not of the zoo's pairs
        for k in argus_classifiers(ds, cfg): print(ds, k, f'{time.time()-t0:.0f} s', flush=True)
    if 'vq' in a.part:
        load_vqvae(ds, cfg=cfg); print(ds, 'vqvae', f'{time.time()-t0:.0f} s', flush=True)
        for lam in lambdas: load_argus(ds, lam, 'argus', cfg=cfg); print(ds, 'argus', lam, f'{time.time()-t0:.0f} s', flush=True)
    if 'ablations' in a.part and ds == abl.dataset:
        for v in ('-2D', '-VQ'):
            for lam in abl.lambdas: load_argus(ds, lam, v, cfg=cfg); print(ds, v, lam, f'{time.time()-t0:.0f} s', flush=True)
