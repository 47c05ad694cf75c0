#!/usr/bin/env python
"""`make smoke`: every notebook under the `paper` profile, its budgets scaled down, end to end on this machine.

The `paper` profile's models, widths, methods and dataset lists (CIFAR-10, SVHN, EMNIST sections included) run with
every budget × `LATENTNB_BUDGET_SCALE` (default 0.001; never below `ci`'s value: see `latentnb.config.scale_budget`).
Datasets that need the internet are played by offline stand-ins of the same shape (`LATENTNB_STANDINS`, default
cifar10 and svhn by colour-mnist, emnist-letters by mnist), and the run says so in its table.

It runs in a scratch copy of the working tree (`_build/smoke/tree/`), so no committed figure, checkpoint, study or result
is touched; the scaled models it trains stay there and are reopened by the next smoke run. What it records: one row
per notebook (seconds, ok, the error) in `figures/smoke/<profile>-x<scale>.json` and the table `figures/SMOKE.md`.
Usage: `python tools/smoke.py [GLOB ...]` (default: every numbered notebook); `--fresh` deletes the scratch copy first.
"""
import json, os, shutil, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMOKE = Path(os.environ.get('LATENTNB_SMOKE_DIR') or ROOT/'_build'/'smoke')   # a second scratch copy lets two smoke runs go at once
TREE = SMOKE/'tree'
DATA_CACHES = ('mnist', 'fashion-mnist', 'digits', 'cifar10', 'svhn', 'emnist-letters', 'MANIFEST.sha256')
DEFAULT_STANDINS = 'cifar10=colour-mnist,svhn=colour-mnist,emnist-letters=mnist'

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

def main(argv):
    fresh = '--fresh' in argv; pats = [a for a in argv if not a.startswith('--')]
    os.environ.setdefault('LATENTNB_PROFILE', 'paper')
    os.environ.setdefault('LATENTNB_BUDGET_SCALE', '0.001')
    os.environ.setdefault('LATENTNB_STANDINS', DEFAULT_STANDINS)
    os.environ['LATENTNB_ROOT'] = str(TREE)
    os.environ.pop('MPLBACKEND', None)
    if fresh and TREE.exists(): shutil.rmtree(TREE)
    TREE.mkdir(parents=True, exist_ok=True); sync_tree()
    sys.path.insert(0, str(ROOT))
    import nbformat
    from nbclient import NotebookClient
    from latentnb.config import load_config
    from latentnb.report import code_commit
    cfg = load_config(seed_all=False)
    pats = [Path(p).name for p in pats] or ['[0-9]*.ipynb']
    nbs = sorted({p for pat in pats for p in (TREE/'nbs').glob(pat)})
    if not nbs: sys.exit(f"tools/smoke.py: no notebook in nbs/ matches {', '.join(pats)}")
    commit, tag = code_commit(ROOT), f'{cfg.profile}-x{cfg.scale:g}'
    out = SMOKE/'executed'/tag; out.mkdir(parents=True, exist_ok=True)
    log = ROOT/'figures'/'smoke'/f'{tag}.json'; log.parent.mkdir(parents=True, exist_ok=True)
    rows = {r['name']: r for r in json.loads(log.read_text())} if log.exists() else {}
    print(f"== smoke: {len(nbs)} notebooks, profile {cfg.profile!r} × {cfg.scale:g}, device {cfg.device}, commit {commit}, "
          f"stand-ins {os.environ['LATENTNB_STANDINS'] or 'none'}; scratch copy {TREE}", flush=True)
    for i, p in enumerate(nbs, 1):
        print(f"[{i}/{len(nbs)}] {p.name} ...", flush=True)
        nb, t0, ok, err = nbformat.read(p, as_version=4), time.time(), True, ''
        try: NotebookClient(nb, timeout=None, kernel_name='python3', resources={'metadata': {'path': str(p.parent)}}).execute()
        except Exception as e:
            ok, err = False, (f"{e.ename}: {e.evalue}" if getattr(e, 'ename', None) else (str(e).strip().splitlines() or [type(e).__name__])[-1])
            err = ' '.join(err.split())[:300]
        dt = time.time() - t0
        nbformat.write(nb, out/p.name)
        rows[p.name] = dict(name=p.name, profile=cfg.profile, scale=cfg.scale, seconds=round(dt, 1), ok=ok, error=err, commit=commit,
                            date=time.strftime('%Y-%m-%d %H:%M'), device=str(cfg.device), standins=os.environ['LATENTNB_STANDINS'])
        if log.exists(): rows = {r['name']: r for r in json.loads(log.read_text())} | {p.name: rows[p.name]}   # another smoke run may have written rows meanwhile
        log.write_text(json.dumps(sorted(rows.values(), key=lambda r: r['name']), indent=1) + '\n')
        print(f"    {'ok' if ok else 'FAILED: ' + err} in {dt:.0f} s", flush=True)
    write_table()
    failed = [n for n, r in rows.items() if not r['ok']]
    print(f"== smoke done: {len(rows) - len(failed)} ok, {len(failed)} failed{': ' + ', '.join(failed) if failed else ''}")
    return 1 if failed else 0

def write_table():
    "figures/SMOKE.md: one table per smoke log in figures/smoke/"
    lines = ['# Smoke runs of the `paper` profile, scaled down', '',
             'Written by `tools/smoke.py` (`make smoke`): every notebook with the `paper` profile\'s models and methods, every',
             'budget × the scale (never below `ci`\'s), run end to end on this machine in a scratch copy. Stand-ins play the',
             'datasets that need the internet. Seconds are wall time of the notebook; each row names the commit it ran at.',
             'The last column divides the seconds by the scale: a rough upper bound of the notebook\'s time at full `paper`',
             'budgets on this CPU (an estimate, not a measurement: budgets held at `ci`\'s floor and fixed costs do not scale).', '']
    for log in sorted((ROOT/'figures'/'smoke').glob('*.json')):
        rows = json.loads(log.read_text())
        tot = sum(r['seconds'] for r in rows)
        lines += [f'## {log.stem}', '', f"{sum(r['ok'] for r in rows)} of {len(rows)} notebooks ok; {tot/60:.1f} min in all; "
                  f"device {rows[0]['device']}; stand-ins: {rows[0]['standins'] or 'none'}", '',
                  '| notebook | profile | scale | seconds | ok | commit | date | error or note | estimate at full scale, this CPU (h) |',
                  '|---|---|---|---|---|---|---|---|---|']
        lines += [f"| {r['name']} | {r['profile']} | {r['scale']:g} | {r['seconds']:.0f} | {'ok' if r['ok'] else 'FAILED'} | {r['commit']} | "
                  f"{r['date']} | {r['error'].replace('|', '/')} | {r['seconds']/r['scale']/3600:,.0f} |" for r in rows] + ['']
    (ROOT/'figures'/'SMOKE.md').write_text('\n'.join(lines))

if __name__ == '__main__': sys.exit(main(sys.argv[1:]))
