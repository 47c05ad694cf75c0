#!/usr/bin/env python
"""`make reproduce`: execute every notebook in order under the active profile (default quick).

Executed copies go to `_build/executed/` (the docs site is built from them), figures to `figures/`,
and `figures/RESULTS.md` summarises wall times, recorded results and figures (runs are logged in
`figures/runs.json`, committed, so re-running a few notebooks updates their rows and keeps the others).  Usage:
`python tools/reproduce.py [GLOB ...]` (default: every notebook in nbs/ except index).
A failing notebook is reported and the run goes on; the exit status says whether all passed.
"""
import os, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.chdir(ROOT)
os.environ.setdefault('LATENTNB_PROFILE', 'quick')
os.environ.pop('MPLBACKEND', None)  # kernels use the inline backend, so executed notebooks (and the site) keep their figures
import nbformat
from nbclient import NotebookClient
from latentnb.config import load_config
from latentnb.report import write_summary, code_commit, machine_benchmark

cfg = load_config(seed_all=False)
pats = [Path(a).name if a.startswith('nbs/') else a for a in sys.argv[1:]] or ['[0-9]*.ipynb']   # names or globs in nbs/ ('nbs/' prefix allowed)
missing = [pat for pat in pats if not any((ROOT/'nbs').glob(pat))]
if missing: sys.exit(f"tools/reproduce.py: no notebook in nbs/ matches {', '.join(map(repr, missing))}; give names or globs such as "
                     f"'41_rq1_counts.ipynb' or '6*.ipynb' (no argument: every numbered notebook)")
nbs = sorted({p for pat in pats for p in (ROOT/'nbs').glob(pat)})
out_dir = ROOT/'_build'/'executed'; out_dir.mkdir(parents=True, exist_ok=True)
commit = code_commit(ROOT)
print(f"== reproducing {len(nbs)} notebooks with profile {cfg.profile!r} on {cfg.device} at commit {commit}", flush=True)
ck = [p for p in sorted(cfg.ckpt_dir.glob(f'*.{cfg.profile}.pt')) if p.with_suffix('.json').exists()] if cfg.ckpt_dir.exists() else []   # with a manifest: not TorchScript copies
print(f"   checkpoints: {len(ck)} trained {cfg.profile!r} model(s) in {cfg.ckpt_dir} are loaded, not retrained "
      f"(a missing or stale one is trained when its notebook runs; `make retrain` trains every one from scratch)", flush=True)
machine_s = machine_benchmark()   # this machine's speed, kept in every row: rows from machines of different speed do not add up
print(f"   machine: the fixed benchmark workload (latentnb.report.machine_benchmark) took {machine_s:.2f} s", flush=True)
runs, t_all = [], time.time()
for i, nb_path in enumerate(nbs, 1):
    print(f"[{i}/{len(nbs)}] {nb_path.name} ...", flush=True)
    before = {p: p.stat().st_mtime for p in cfg.fig_dir.glob('*.png')} if cfg.fig_dir.exists() else {}
    nb = nbformat.read(nb_path, as_version=4)
    t0, ok, err, date = time.time(), True, '', time.strftime('%Y-%m-%d %H:%M')
    try:
        NotebookClient(nb, timeout=None, kernel_name='python3', resources={'metadata': {'path': str(nb_path.parent)}}).execute()
    except Exception as e:
        ok, err = False, str(e).strip().splitlines()[-1][:300] if str(e).strip() else type(e).__name__
    dt = time.time() - t0
    nbformat.write(nb, out_dir/nb_path.name)
    figs = sorted(p for p in cfg.fig_dir.glob('*.png') if before.get(p) != p.stat().st_mtime) if cfg.fig_dir.exists() else []
    runs.append(dict(name=nb_path.name, seconds=dt, ok=ok, figures=figs, section=nb_path.stem, commit=commit, date=date, profile=cfg.profile,
                machine_s=machine_s))
    print(f"    {'ok' if ok else 'FAILED: ' + err} in {dt:.0f} s, {len(figs)} figure(s)", flush=True)
# Merge with earlier runs of the same profile, so re-running a few notebooks keeps the others in the summary.
# The log sits beside the figures (committed for `quick`), figure paths relative to it, so a fresh clone keeps the rows.
import json, re
log = cfg.fig_dir/'runs.json'
def _seed_from_summary(md):
    "Rows of an older RESULTS.md (wall-time table + figure links), for a log that does not exist yet"
    if not md.exists(): return {}
    txt, rows = md.read_text(), {}
    for name, st, sec in re.findall(r'^\| (\S+\.ipynb) \| (ok|FAILED) \| (\d+) \|$', txt, re.M):
        part = txt.split(f'## {name}\n', 1)[1].split('\n## ', 1)[0] if f'## {name}\n' in txt else ''
        rows[name] = dict(name=name, seconds=float(sec), ok=st == 'ok', section=Path(name).stem,
                          figures=re.findall(r'!\[[^\]]*\]\(([^)]+)\)', part))
    return rows
prev = {r['name']: r for r in json.loads(log.read_text())} if log.exists() else _seed_from_summary(cfg.fig_dir/'RESULTS.md')
prev.update({r['name']: dict(r, figures=[str(Path(f).relative_to(cfg.fig_dir)) for f in r['figures']]) for r in runs})
log.write_text(json.dumps(list(prev.values()), indent=1) + '\n')
all_runs = [dict(prev[k], figures=[str(cfg.fig_dir/f) for f in prev[k]['figures']]) for k in sorted(prev) if (ROOT/'nbs'/k).exists()]
summary = write_summary(all_runs, cfg)
n_bad = sum(not r['ok'] for r in runs)
print(f"== done in {(time.time()-t_all)/60:.1f} min: {len(runs)-n_bad} ok, {n_bad} failed; summary: {summary.relative_to(ROOT)}")
sys.exit(1 if n_bad else 0)
