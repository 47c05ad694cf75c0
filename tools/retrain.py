#!/usr/bin/env python
"""`make retrain`: train every committed checkpoint of the profile from scratch, in dependency order, then reproduce.

Nothing committed is touched: the models are trained into a fresh folder, `data/retrained/<profile>/` (git-ignored),
through `LATENTNB_CKPT_DIR`, by running first the notebooks that produce them (the producers named in the committed
manifests, in notebook order: the zoo's classifiers before the GAN, whose quality they judge; the VAEs before
SINVAD; the VQ-VAE before Argus's joint models; notebook 81 for the GIFTbench generators), then every notebook as
`make reproduce` does, on those new models.  To adopt them, copy `data/retrained/<profile>/*` into `data/checkpoints/`.

Usage: `python tools/retrain.py [--dry-run] [--keep]` (`--keep`: continue into an existing retrain folder, so an
interrupted retrain resumes where it stopped; without it the folder is emptied first).
"""
import argparse, json, os, re, shutil, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.chdir(ROOT)
os.environ.setdefault('LATENTNB_PROFILE', 'quick')
p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
p.add_argument('--dry-run', action='store_true', help='print the plan and the recorded training times, train nothing')
p.add_argument('--keep', action='store_true', help='resume into an existing retrain folder instead of emptying it')
args = p.parse_args()
profile = os.environ['LATENTNB_PROFILE']
committed = ROOT/'data'/'checkpoints'
manifests = [json.loads(f.read_text()) for f in sorted(committed.glob(f'*.{profile}.json'))]
models = [m for m in manifests if 'sha256' in m]   # trained weights (the others are caches: filter thresholds, GAN study, losses)
if not models: sys.exit(f"no committed {profile!r} checkpoints in {committed}: nothing to retrain")

def notebook_of(producer):
    "The notebook that (re)trains a checkpoint, from its manifest's producer ('nbs/10_zoo.ipynb (…)', '… (61_argus_rq)', '… (notebook 81)')"
    m = re.search(r'(\d\d)_\w+', producer) or re.search(r'notebook (\d\d)', producer)
    if not m: sys.exit(f"cannot tell which notebook trains a checkpoint made by {producer!r}")
    hits = sorted((ROOT/'nbs').glob(f'{m.group(1)}_*.ipynb'))
    return hits[0].name

by_nb = {}
for m in models: by_nb.setdefault(notebook_of(m['producer']), []).append(m)
# A GAN's generator and discriminator are one training (same creation time): count its seconds once.
runs = {(m['producer'], m.get('created'), (m.get('metrics') or {}).get('train_seconds')) for m in models}
recorded = sum(s or 0 for _, _, s in runs)
print(f"== retrain plan, profile {profile!r}: {len(models)} checkpoints from {len(runs)} trainings, produced by {len(by_nb)} notebooks")
for nb in sorted(by_nb):
    secs = sum(s or 0 for prod, _, s in runs if notebook_of(prod) == nb)
    print(f"   {nb:32s} {len(by_nb[nb]):3d} checkpoint(s), {secs/60:6.1f} min of training recorded in their manifests")
print(f"   total training time recorded in the committed manifests (2-core CPU): {recorded/3600:.2f} h, then one `make reproduce` on the new models")
if args.dry_run: sys.exit(0)

out = ROOT/'data'/'retrained'/profile
if out.exists() and not args.keep: shutil.rmtree(out)
out.mkdir(parents=True, exist_ok=True)
env = dict(os.environ, LATENTNB_CKPT_DIR=str(out))
t0 = time.time()
print(f"== phase 1: the producing notebooks, training into {out.relative_to(ROOT)}", flush=True)
r1 = subprocess.run([sys.executable, 'tools/reproduce.py', *sorted(by_nb)], env=env)
t1 = time.time()
print(f"== phase 2: every notebook on the retrained models", flush=True)
r2 = subprocess.run([sys.executable, 'tools/reproduce.py'], env=env)
print(f"== retrain done in {(time.time()-t0)/3600:.2f} h (training notebooks {(t1-t0)/3600:.2f} h); "
      f"new checkpoints in {out.relative_to(ROOT)}: copy them into data/checkpoints/ to adopt them")
sys.exit(r1.returncode or r2.returncode)
