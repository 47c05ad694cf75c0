#!/usr/bin/env python
"""`make smoke`: every notebook under the `paper` profile, its budgets scaled down, end to end on this machine.

The `paper` profile's models, widths, methods and dataset lists (CIFAR-10, SVHN, EMNIST sections included) run with
every budget × `LATENTNB_BUDGET_SCALE` (default 0.001; never below `ci`'s value: see `latentnb.config.scale_budget`).
Datasets that need the internet are played by offline stand-ins of the same shape (`LATENTNB_STANDINS`, default
cifar10 and svhn by colour-mnist, emnist-letters by mnist), and the run says so in its table.

It runs in a scratch copy of the working tree (`_build/smoke/tree/`), so no committed figure, checkpoint, study or result
is touched; the scaled models it trains stay there and are reopened by the next smoke run. Each notebook is one job of
`latentnb.grid` (`notebook_job`, in `_build/smoke/jobs/<profile>-x<scale>/<notebook>/`): a rerun reopens every notebook
that finished ok with the same library, profiles and notebook, and runs the failed and changed ones again; the backend is
`LATENTNB_GRID_BACKEND` (default: inline, or local processes with `LATENTNB_SMOKE_WORKERS` > 1; 'dask' with
`LATENTNB_DASK_ADDRESS` for a cluster whose workers share this folder). Notebooks that run at once share the scratch
copy's checkpoints: run the model-training notebooks (10, 11, 12, 50, 60, 81) first. What it records: one row per notebook
(seconds, ok, the error, the commit it ran at) in `figures/smoke/<profile>-x<scale>.json` and the table `figures/SMOKE.md`.
Usage: `python tools/smoke.py [GLOB ...]` (default: every numbered notebook); `--fresh` deletes the scratch copy first.
"""
import hashlib, json, os, pickle, shutil, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMOKE = Path(os.environ.get('LATENTNB_SMOKE_DIR') or ROOT/'_build'/'smoke')   # a second scratch copy lets two smoke runs go at once
TREE = SMOKE/'tree'
DATA_CACHES = ('mnist', 'fashion-mnist', 'digits', 'cifar10', 'svhn', 'emnist-letters', 'MANIFEST.sha256')
DEFAULT_STANDINS = 'cifar10=colour-mnist,svhn=colour-mnist,emnist-letters=mnist'
NUMBERED = '[0-9]*.ipynb'   # the notebooks a smoke run covers by default

def notebooks_now() -> set:
    "Names of the numbered notebooks in the live tree's nbs/ (the scratch copy keeps deleted and renamed ones)"
    return {p.name for p in (ROOT/'nbs').glob(NUMBERED)}

def sync_tree():
    "Copy the working tree's tracked files (as they are now) and the verified dataset caches into the scratch copy"
    files = subprocess.run(['git', 'ls-files', '-z'], cwd=ROOT, capture_output=True, check=True).stdout.decode().split('\0')
    for f in filter(None, files):
        src, dst = ROOT/f, TREE/f
        if not src.is_file(): continue
        if dst.exists() and dst.stat().st_size == src.stat().st_size and dst.stat().st_mtime >= src.stat().st_mtime: continue
        dst.parent.mkdir(parents=True, exist_ok=True); shutil.copy2(src, dst)
    for d in DATA_CACHES:
        src, dst = ROOT/'data'/d, TREE/'data'/d
        if src.is_dir(): shutil.copytree(src, dst, dirs_exist_ok=True)
        elif src.is_file(): shutil.copy2(src, dst)

def tree_version(nb:Path) -> str:
    "What a notebook's smoke row depends on: the library's source, the profiles and the notebook (a change to any recomputes it)"
    h = hashlib.blake2b(digest_size=10)
    lib = sorted((TREE/'latentnb').rglob('*.py'))   # every module, the sub-packages' too
    for f in lib + [TREE/'latentnb'/'profiles.toml', nb]: h.update(str(f.relative_to(TREE)).encode()); h.update(f.read_bytes())
    return h.hexdigest()

def smoke_jobs(nbs:list, tag:str, env:dict) -> list:
    "One `latentnb.grid` job per notebook, each in `_build/smoke/jobs/<tag>/<notebook>/`; a failed notebook's job is cleared to run again"
    from latentnb.grid import Job, notebook_job, is_done, DONE, RESULT
    jobs = [Job(notebook_job, dict(path=str(p), env=env), SMOKE/'jobs'/tag/p.stem, version=tree_version(p)) for p in nbs]
    for j in jobs:
        if is_done(j) and not pickle.loads((j.out_dir/RESULT).read_bytes())['ok']:
            for f in (DONE, 'stamp.json'): (j.out_dir/f).unlink(missing_ok=True)
    return jobs

def collect(jobs:list, meta:dict, log:Path) -> dict:
    "Write the rows of the finished jobs into the smoke log; a job computed now is stamped with this commit, a reopened one keeps its stamp"
    from latentnb.grid import is_done, RESULT
    rows = {r['name']: r for r in json.loads(log.read_text())} if log.exists() else {}
    rows = {n: r for n, r in rows.items() if n in notebooks_now()}   # a notebook gone from nbs/ (deleted, renamed) loses its row
    for j in jobs:
        if not is_done(j): continue
        sp = j.out_dir/'stamp.json'
        if not sp.exists(): sp.write_text(json.dumps(meta | dict(date=time.strftime('%Y-%m-%d %H:%M', time.localtime((j.out_dir/'done').stat().st_mtime)))))
        r, stamp = pickle.loads((j.out_dir/RESULT).read_bytes()), json.loads(sp.read_text())
        rows[r['name']] = dict(name=r['name'], **{k: v for k, v in stamp.items() if k != 'date'}, seconds=r['seconds'],
                               ok=r['ok'], error=r['error'], date=stamp['date'])
    log.write_text(json.dumps(sorted(rows.values(), key=lambda r: r['name']), indent=1) + '\n')
    return rows

def main(argv):
    fresh = '--fresh' in argv; pats = [a for a in argv if not a.startswith('--')]
    os.environ.setdefault('LATENTNB_PROFILE', 'paper')
    os.environ.setdefault('LATENTNB_BUDGET_SCALE', '0.001')
    os.environ.setdefault('LATENTNB_STANDINS', DEFAULT_STANDINS)
    os.environ['LATENTNB_ROOT'] = str(TREE)
    os.environ.pop('MPLBACKEND', None)
    if fresh and SMOKE.exists(): shutil.rmtree(SMOKE)
    TREE.mkdir(parents=True, exist_ok=True); sync_tree()
    sys.path.insert(0, str(ROOT))
    from latentnb.config import load_config
    from latentnb.grid import run_jobs
    from latentnb.report import code_commit, machine_benchmark
    cfg = load_config(seed_all=False)
    pats = [Path(p).name for p in pats] or [NUMBERED]
    nbs = sorted({p for pat in pats for p in (TREE/'nbs').glob(pat)})
    if not nbs: sys.exit(f"tools/smoke.py: no notebook in nbs/ matches {', '.join(pats)}")
    tag = f'{cfg.profile}-x{cfg.scale:g}'
    meta = dict(profile=cfg.profile, scale=cfg.scale, commit=code_commit(ROOT), device=str(cfg.device), standins=os.environ['LATENTNB_STANDINS'],
                machine_s=round(machine_benchmark(), 3))   # this machine's speed (latentnb.report.machine_benchmark): rows from machines of different speed do not add up
    env = {k: os.environ[k] for k in ('LATENTNB_PROFILE', 'LATENTNB_BUDGET_SCALE', 'LATENTNB_STANDINS', 'LATENTNB_ROOT', 'LATENTNB_DATASET') if k in os.environ}
    env['PYTHONPATH'] = os.pathsep.join(filter(None, [str(TREE), os.environ.get('PYTHONPATH')]))   # the kernels import the scratch copy's library, not the live tree's
    log = ROOT/'figures'/'smoke'/f'{tag}.json'; log.parent.mkdir(parents=True, exist_ok=True)
    workers = int(os.environ.get('LATENTNB_SMOKE_WORKERS', '1'))
    jobs = smoke_jobs(nbs, tag, env)
    print(f"== smoke: {len(nbs)} notebooks as grid jobs under {SMOKE/'jobs'/tag}, profile {cfg.profile!r} × {cfg.scale:g}, device {cfg.device}, "
          f"commit {meta['commit']}, stand-ins {meta['standins'] or 'none'}, {workers} worker(s); scratch copy {TREE}", flush=True)
    try: gr = run_jobs(jobs, desc='smoke', default_backend='processes' if workers > 1 else 'inline', workers=workers, threads=0)
    finally: rows = collect(jobs, meta, log); write_table()
    print(gr)
    for j, r in zip(jobs, gr.results): print(f"    {r['name']}: {'ok' if r['ok'] else 'FAILED: ' + r['error']} in {r['seconds']:.0f} s")
    failed = [n for n, r in rows.items() if not r['ok']]
    print(f"== smoke done: {len(rows) - len(failed)} ok, {len(failed)} failed{': ' + ', '.join(failed) if failed else ''}")
    return 1 if failed else 0

def write_table():
    "figures/SMOKE.md: one table per smoke log in figures/smoke/"
    lines = ['# Smoke runs of the `paper` profile, scaled down', '',
             'Written by `tools/smoke.py` (`make smoke`): every notebook with the `paper` profile\'s models and methods, every',
             'budget × the scale (never below `ci`\'s, but the colour zoo models\' epochs), run end to end on this machine in a scratch copy, each notebook one job of',
             '`latentnb.grid` (a rerun reopens the notebooks that finished ok with the same library, profiles and notebook). Stand-ins',
             'play the datasets that need the internet. Seconds are wall time of the notebook; each row names the commit it ran at.',
             'The last column divides the seconds by the scale: a rough upper bound of the notebook\'s time at full `paper`',
             'budgets on this CPU (an estimate, not a measurement: budgets held at `ci`\'s floor and fixed costs do not scale).',
             'The machine column is `latentnb.report.machine_benchmark`\'s seconds at the start of the run that made the row (– before it was',
             'recorded): rows with different values ran on machines of different speed.', '']
    now = notebooks_now()
    for log in sorted((ROOT/'figures'/'smoke').glob('*.json')):
        rows = [r for r in json.loads(log.read_text()) if r['name'] in now]   # the notebooks in nbs/ now
        if not rows: continue
        tot, norow = sum(r['seconds'] for r in rows), len(now) - len(rows)
        lines += [f'## {log.stem}', '', f"{sum(r['ok'] for r in rows)} of {len(now)} notebooks ok"
                  f"{f' ({norow} not run yet: no row)' if norow else ''}; {tot/60:.1f} min in all; "
                  f"device {rows[0]['device']}; stand-ins: {rows[0]['standins'] or 'none'}", '',
                  '| notebook | profile | scale | seconds | machine (s) | ok | commit | date | error or note | estimate at full scale, this CPU (h) |',
                  '|---|---|---|---|---|---|---|---|---|---|']
        lines += [f"| {r['name']} | {r['profile']} | {r['scale']:g} | {r['seconds']:.0f} | {r.get('machine_s') or '–'} | {'ok' if r['ok'] else 'FAILED'} | {r['commit']} | "
                  f"{r['date']} | {r['error'].replace('|', '/')} | {r['seconds']/r['scale']/3600:,.0f} |" for r in rows] + ['']
    (ROOT/'figures'/'SMOKE.md').write_text('\n'.join(lines))

if __name__ == '__main__': sys.exit(main(sys.argv[1:]))
