#!/usr/bin/env python
"""`make reproduce`: execute every notebook under the active profile (default quick), two at a time on a machine with 2+ cores.

Executed copies go to `_build/executed/` (the docs site is built from them), figures to `figures/`,
and `figures/RESULTS.md` summarises wall times, recorded results and figures (runs are logged in
`figures/runs.json`, committed, so re-running a few notebooks updates their rows and keeps the others).  Usage:
`python tools/reproduce.py [--jobs N] [GLOB ...]` (default: every notebook in nbs/ except index; `--jobs`, or
$LATENTNB_REPRO_JOBS, notebooks at a time: default 2 on 2+ cores, each kernel then on one torch thread).

Order: the notebooks of one section (the first digit of the name: 4x = DiffGAN's RQs, 6x = Argus, ...) run one after
another in name order, as later ones reopen what earlier ones made (41's RQ runs, 63's study folder); sections do not wait
for each other, as they share only the committed checkpoints, which they load (a stale one is retrained by whichever
notebook meets it, and written atomically); `AFTER` names the cross-section needs there are. `EXCLUSIVE` notebooks
(wall-clock budgets) run alone with every core. Among the notebooks that may start, the one heading the longest chain
(by the last logged wall times) goes first. A failing notebook is reported and the run goes on; the exit status says
whether all passed. Each finished notebook is logged at once, so Ctrl-C keeps the rows of what finished.
A notebook still running after `stall_limit` (3x its last logged wall time, at least 15 min) is taken for a hung kernel
(a lost execute reply; ipykernel is pinned to 6.x for it), killed with its kernel, and run once more.
"""
import os, sys, time, json, re, argparse, subprocess, tempfile, signal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXCLUSIVE = {'41_rq1_counts.ipynb'}   # RQ1's runs have wall-clock budgets on 2 worker processes: nothing may run beside them
AFTER = {'90_cross_product.ipynb': ['11_gan.ipynb', '50_vae.ipynb', '60_argus.ipynb', '81_giftbench_training.ipynb']}   # the generators it loads

def run_one(nb_path:Path, row_path:Path, out_dir:Path):
    "Child mode: execute one notebook in a fresh kernel, write the executed copy and {'ok', 'error', 'seconds'}"
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(nb_path, as_version=4)
    # each notebook ends with `nbdev.nbdev_export()`, which rewrites latentnb/*.py: beside another kernel importing them it is a race
    # (seen: "cannot import name 'load_dataset' from 'latentnb.data'"); the parent exports once before the run, so the cell is dropped
    nb.cells = [c for c in nb.cells if not (c.cell_type == 'code' and 'nbdev_export()' in c.source and 'import nbdev' in c.source)]
    t0, ok, err = time.time(), True, ''
    try: NotebookClient(nb, timeout=None, kernel_name='python3', resources={'metadata': {'path': str(nb_path.parent)}}).execute()
    except Exception as e: ok, err = False, str(e).strip().splitlines()[-1][:300] if str(e).strip() else type(e).__name__
    nbformat.write(nb, out_dir/nb_path.name)
    row_path.write_text(json.dumps(dict(ok=ok, error=err, seconds=time.time() - t0)))

def dependencies(names:list) -> dict:
    "For each selected notebook, the selected notebooks that must finish first"
    sec = lambda n: n[0]
    deps = {}
    for i, n in enumerate(names):
        same = [m for m in names[:i] if sec(m) == sec(n)]
        d = set(same[-1:]) | {m for m in AFTER.get(n, []) if m in names}   # the previous one of its section, and AFTER's
        deps[n] = d
    return deps

def chain_seconds(names:list, deps:dict, guess:dict) -> dict:
    "Seconds from a notebook's start to the end of the longest chain that waits for it (last logged wall times; 60 s when none)"
    after = {n: [m for m in names if n in deps[m]] for n in names}
    memo = {}
    def f(n):
        if n not in memo: memo[n] = guess.get(n, 60.0) + max((f(m) for m in after[n]), default=0.0)
        return memo[n]
    return {n: f(n) for n in names}

def stall_limit(last_s:float|None, floor_s:float=900.0, factor:float=3.0) -> float:
    "Seconds after which a running notebook counts as hung: `factor` x its last logged wall time, at least `floor_s`"
    return max(floor_s, factor * (last_s or 0.0))

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('globs', nargs='*', help="notebook names or globs in nbs/ ('nbs/' prefix allowed); none: every numbered notebook")
    ap.add_argument('--jobs', type=int, default=int(os.environ.get('LATENTNB_REPRO_JOBS') or min(2, os.cpu_count() or 1)),
                    help='notebooks at a time (default: $LATENTNB_REPRO_JOBS, else 2 on 2+ cores)')
    ap.add_argument('--one', nargs=3, metavar=('NOTEBOOK', 'ROW', 'OUT_DIR'), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one: return run_one(Path(a.one[0]), Path(a.one[1]), Path(a.one[2]))
    if a.jobs < 1: sys.exit(f"tools/reproduce.py: --jobs must be at least 1, got {a.jobs}")
    os.chdir(ROOT)
    os.environ.setdefault('LATENTNB_PROFILE', 'quick')
    os.environ.pop('MPLBACKEND', None)  # kernels use the inline backend, so executed notebooks (and the site) keep their figures
    from latentnb.config import load_config
    from latentnb.report import write_summary, code_commit, machine_benchmark

    cfg = load_config(seed_all=False)
    exp = subprocess.run([str(Path(sys.executable).parent/'nbdev_export')], capture_output=True, text=True)   # the notebooks' exports, once
    if exp.returncode: sys.exit(f"tools/reproduce.py: nbdev_export failed: {exp.stderr.strip()[-500:]}")
    pats = [Path(p).name if p.startswith('nbs/') else p for p in a.globs] or ['[0-9]*.ipynb']
    missing = [p for p in pats if not any((ROOT/'nbs').glob(p))]
    if missing: sys.exit(f"tools/reproduce.py: no notebook in nbs/ matches {', '.join(map(repr, missing))}; give names or globs such as "
                         f"'41_rq1_counts.ipynb' or '6*.ipynb' (no argument: every numbered notebook)")
    nbs = sorted({p.name for pat in pats for p in (ROOT/'nbs').glob(pat)})
    out_dir = ROOT/'_build'/'executed'; out_dir.mkdir(parents=True, exist_ok=True)
    commit = code_commit(ROOT)
    jobs = min(a.jobs, len(nbs))
    print(f"== reproducing {len(nbs)} notebooks with profile {cfg.profile!r} on {cfg.device} at commit {commit}, {jobs} at a time", flush=True)
    ck = [p for p in sorted(cfg.ckpt_dir.glob(f'*.{cfg.profile}.pt')) if p.with_suffix('.json').exists()] if cfg.ckpt_dir.exists() else []
    print(f"   checkpoints: {len(ck)} trained {cfg.profile!r} model(s) in {cfg.ckpt_dir} are loaded, not retrained "
          f"(a missing or stale one is trained when its notebook runs; `make retrain` trains every one from scratch)", flush=True)
    machine_s = machine_benchmark()   # this machine's speed, kept in every row: rows from machines of different speed do not add up
    print(f"   machine: the fixed benchmark workload (latentnb.report.machine_benchmark) took {machine_s:.2f} s", flush=True)

    log = cfg.fig_dir/'runs.json'
    prev = {r['name']: r for r in json.loads(log.read_text())} if log.exists() else _seed_from_summary(cfg.fig_dir/'RESULTS.md')
    deps = dependencies(nbs)
    prio = chain_seconds(nbs, deps, {n: r['seconds'] for n, r in prev.items()})
    tmp = Path(tempfile.mkdtemp(prefix='latentnb-reproduce-'))
    run_id, t_all = f"{commit} {time.strftime('%Y-%m-%d %H:%M')}", time.time()
    todo, running, done, runs, started, retried = list(nbs), {}, set(), [], {}, set()

    def start(n):
        env = dict(os.environ, LATENTNB_FIG_LOG=str(tmp/f'{n}.figs'))
        if jobs > 1 and n not in EXCLUSIVE:   # two kernels on two cores: one thread each (a wall-clock notebook alone keeps them all)
            env.setdefault('LATENTNB_THREADS', '1'); env.setdefault('OMP_NUM_THREADS', '1'); env.setdefault('MKL_NUM_THREADS', '1')
        print(f"[{len(done) + len(running) + 1}/{len(nbs)}] {n} ..." + (' (alone: wall-clock budgets)' if n in EXCLUSIVE and jobs > 1 else ''), flush=True)
        p = subprocess.Popen([sys.executable, __file__, '--one', str(ROOT/'nbs'/n), str(tmp/f'{n}.row'), str(out_dir)], env=env,
                             start_new_session=True)   # its own process group: a hung notebook is killed with its kernel
        running[n] = (p, time.strftime('%Y-%m-%d %H:%M'))
        started[n] = time.time()

    def kill(p):
        try: os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError: pass
        p.wait()

    def watchdog():
        for n, (p, _) in list(running.items()):
            limit = stall_limit(prev.get(n, {}).get('seconds'))
            if p.poll() is None and time.time() - started[n] > limit:
                kill(p); running.pop(n)
                if n in retried:
                    (tmp/f'{n}.row').write_text(json.dumps(dict(ok=False, error=f'hung twice (over {limit:.0f} s each)', seconds=time.time() - started[n])))
                    running[n] = (p, time.strftime('%Y-%m-%d %H:%M')); continue   # finish() logs it as failed
                retried.add(n)
                print(f"    {n}: still running after {limit:.0f} s (3x its last wall time, at least 15 min): killed with its kernel, run once more", flush=True)
                start(n)

    def finish(n):
        p, date = running.pop(n); done.add(n)
        rp, fp = tmp/f'{n}.row', tmp/f'{n}.figs'
        r = json.loads(rp.read_text()) if rp.exists() else dict(ok=False, error=f'the runner exited with status {p.returncode}', seconds=0.0)
        figs = sorted({Path(f) for f in fp.read_text().split()} if fp.exists() else set())
        figs = [f for f in figs if f.parent == cfg.fig_dir and f.exists()]   # not the figures a notebook's own tests save in temporary folders
        row = dict(name=n, seconds=r['seconds'], ok=r['ok'], figures=figs, section=Path(n).stem, commit=commit, date=date,
                   profile=cfg.profile, machine_s=machine_s, run_id=run_id, jobs=jobs)
        runs.append(row); save_log(log, prev, runs, cfg)
        print(f"    {n}: {'ok' if r['ok'] else 'FAILED: ' + r['error']} in {r['seconds']:.0f} s, {len(figs)} figure(s)", flush=True)

    try:
        while todo or running:
            watchdog()
            for n in [n for n, (p, _) in running.items() if p.poll() is not None]: finish(n)
            ready = sorted((n for n in todo if deps[n] <= done), key=lambda n: -prio[n])
            alone = any(n in EXCLUSIVE for n in running)
            while ready and not alone and len(running) < jobs:
                n = ready[0]
                if n in EXCLUSIVE and running: break   # it waits for the machine to empty; nothing else starts meanwhile
                todo.remove(n); ready.pop(0); start(n); alone = n in EXCLUSIVE
            time.sleep(0.5)
    except KeyboardInterrupt:
        for p, _ in running.values(): kill(p)
        print(f"== interrupted: {len(runs)} notebook(s) finished and are logged in {log.relative_to(ROOT)}", flush=True)
        raise
    wall = time.time() - t_all
    for r in runs: r['run_wall_s'] = wall
    all_runs = save_log(log, prev, runs, cfg)
    summary = write_summary(all_runs, cfg)
    n_bad = sum(not r['ok'] for r in runs)
    print(f"== done in {wall/60:.1f} min: {len(runs)-n_bad} ok, {n_bad} failed; summary: {summary.relative_to(ROOT)}")
    sys.exit(1 if n_bad else 0)

def save_log(log:Path, prev:dict, runs:list, cfg) -> list:
    "Merge `runs` into the log of earlier runs (figure paths relative to it, so a fresh clone keeps the rows); the rows to summarise"
    merged = dict(prev)
    merged.update({r['name']: dict(r, figures=[str(Path(f).relative_to(cfg.fig_dir)) for f in r['figures']]) for r in runs})
    log.write_text(json.dumps(list(merged.values()), indent=1) + '\n')
    return [dict(merged[k], figures=[str(cfg.fig_dir/f) for f in merged[k]['figures']]) for k in sorted(merged) if (ROOT/'nbs'/k).exists()]

def _seed_from_summary(md:Path) -> dict:
    "Rows of an older RESULTS.md (wall-time table + figure links), for a log that does not exist yet"
    if not md.exists(): return {}
    txt, rows = md.read_text(), {}
    for name, st, sec in re.findall(r'^\| (\S+\.ipynb) \| (ok|FAILED) \| (\d+) \|', txt, re.M):
        part = txt.split(f'## {name}\n', 1)[1].split('\n## ', 1)[0] if f'## {name}\n' in txt else ''
        rows[name] = dict(name=name, seconds=float(sec), ok=st == 'ok', section=Path(name).stem,
                          figures=re.findall(r'!\[[^\]]*\]\(([^)]+)\)', part))
    return rows

if __name__ == '__main__': main()
