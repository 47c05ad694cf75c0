#!/usr/bin/env python
"""Train (or verify) every checkpoint the SINVAD notebooks (50-56) load, with the active profile (default quick).

Usage: `LATENTNB_PROFILE=quick LATENTNB_THREADS=2 .venv/bin/python tools/train_sinvad.py [vae|mix ...]`.
It only calls library functions (`latentnb.generators.vae.load_vae`, `latentnb.sinvad.arch.sinvad_cnn`, `latentnb.sinvad.detection_classifiers`), so the
checkpoints are exactly those the notebooks would train themselves; present ones are just loaded.
"""
import os, sys, time
from pathlib import Path
os.chdir(Path(__file__).resolve().parent.parent)
os.environ.setdefault('LATENTNB_PROFILE', 'quick')
from latentnb.config import load_config
from latentnb.generators.vae import load_vae

cfg = load_config()
parts = sys.argv[1:] or ['vae', 'mix']
t0 = time.time()
if 'vae' in parts:
    B, A = cfg.budget('vae'), cfg.budget('sinvad_arch')
    jobs = [(ds, k, None) for ds in B.datasets for k in ('mlp', 'conv', 'deepconv')]
    jobs += [(ds, k, z) for ds in A.datasets for k, zs in (('mlp', A.mlp_latents), ('deepconv', A.deep_latents)) for z in zs]
    for ds, kind, z in dict.fromkeys(jobs):
        t = time.time(); v = load_vae(ds, kind, z, cfg=cfg)
        print(f"{ds} {kind} z={v.latent_dim}: {time.time()-t:.0f} s", flush=True)
    from latentnb.sinvad.arch import sinvad_cnn   # notebook 54: the paper's 6-hidden-layer CNN, RQ4's model under test
    for ds in A.datasets:
        t = time.time(); sinvad_cnn(ds, cfg=cfg); print(f"{ds} SINVAD CNN: {time.time()-t:.0f} s", flush=True)
if 'mix' in parts:
    from latentnb.sinvad import detection_classifiers
    S = cfg.budget('sinvad_detection')
    for ds in S.datasets:
        for k in range(S.model_seeds):
            t = time.time(); detection_classifiers(ds, cfg=cfg, model_seed=k); print(f"{ds} RQ3 LeNet-5s, training seed {k}: {time.time()-t:.0f} s", flush=True)
print(f"done in {(time.time()-t0)/60:.1f} min")
