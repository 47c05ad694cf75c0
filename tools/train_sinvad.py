#!/usr/bin/env python
"""Train (or verify) every checkpoint the SINVAD notebooks (50-56) load, with the active profile (default quick).

Usage: `LATENTNB_PROFILE=quick LATENTNB_THREADS=2 .venv/bin/python tools/train_sinvad.py [vae|mix ...]`.
It only calls library functions (`latentnb.vae.load_vae`, `latentnb.sinvad.mixed_label_classifier`), so the
checkpoints are exactly those the notebooks would train themselves; present ones are just loaded.
"""
import os, sys, time
from pathlib import Path
os.chdir(Path(__file__).resolve().parent.parent)
os.environ.setdefault('LATENTNB_PROFILE', 'quick')
from latentnb.config import load_config
from latentnb.vae import load_vae

cfg = load_config()
parts = sys.argv[1:] or ['vae', 'mix']
t0 = time.time()
if 'vae' in parts:
    B, A = cfg.budget('vae'), cfg.budget('sinvad_arch')
    jobs = [(ds, k, None) for ds in B.datasets for k in ('mlp', 'conv')]
    jobs += [(A.dataset, 'mlp', z) for z in A.mlp_latents] + [(A.dataset, 'conv', z) for z in A.conv_latents]
    for ds, kind, z in jobs:
        t = time.time(); v = load_vae(ds, kind, z, cfg=cfg)
        print(f"{ds} {kind} z={v.latent_dim}: {time.time()-t:.0f} s", flush=True)
if 'mix' in parts:
    from latentnb.sinvad import detection_classifiers
    S = cfg.budget('sinvad_detection')
    for ds in S.datasets: detection_classifiers(ds, cfg=cfg)
print(f"done in {(time.time()-t0)/60:.1f} min")
