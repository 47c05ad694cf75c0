"The grid of jobs: the three backends agree, a worker killed mid-job is survived, a rerun reopens every finished job."
import json, os, signal, threading, time
from pathlib import Path

import pytest

from latentnb.grid import BACKENDS, Job, _close, dask_client, demo_job, product_jobs, run_grid, run_job


def six(root, **kw): return product_jobs(demo_job, root, fixed=dict(steps=4, **kw), seed=range(6))


@pytest.fixture(scope='module')
def client():
    c = dask_client(workers=2)
    yield c
    _close(c)


def test_bad_backend_is_named():
    with pytest.raises(ValueError, match=r"Unknown backend 'ray'; accepted: inline, processes, dask"):
        run_grid([], backend='ray')
    assert BACKENDS == ('inline', 'processes', 'dask')


def test_reopen_resume_and_other_key(tmp_path):
    job = Job(demo_job, dict(seed=3, steps=3), tmp_path/'a')
    first, second = run_job(job), run_job(job)
    assert first['computed'] and not second['computed'] and first['result'] == second['result']
    other = run_job(Job(demo_job, dict(seed=4, steps=3), tmp_path/'a'))      # other arguments: afresh
    assert other['computed'] and other['result'] != first['result']
    stale = run_job(Job(demo_job, dict(seed=4, steps=3), tmp_path/'a', version='new code'))
    assert stale['computed']


_calls = []
def _flaky(out_dir, x):
    _calls.append(x)
    if len(_calls) == 1: raise RuntimeError('first attempt fails')
    return x * 2


def test_inline_retries(tmp_path):
    r = run_grid([Job(_flaky, dict(x=5), tmp_path/'f')], 'inline', retries=1, progress=False)
    assert r.results == [10] and r.retries == 1


def _ctrl_c_at_3(out_dir, seed, **kw):
    if seed == 3 and not (Path(out_dir)/'state.json').exists(): raise KeyboardInterrupt
    return demo_job(out_dir, seed, **kw)


def test_ctrl_c_leaves_finished_jobs_reopenable(tmp_path):
    jobs = product_jobs(_ctrl_c_at_3, tmp_path, fixed=dict(steps=4), seed=range(6))
    with pytest.raises(KeyboardInterrupt): run_grid(jobs, 'inline', progress=False)
    (jobs[3].out_dir/'state.json').write_text(json.dumps(dict(step=0, values=[], starts=[])))
    after = run_grid(jobs, 'inline', progress=False)
    assert (after.computed, after.reopened) == (3, 3)
    assert after.results == run_grid(six(tmp_path/'ref'), 'inline', progress=False).results


def test_backends_agree_and_rerun_reopens(tmp_path, client):
    inline = run_grid(six(tmp_path/'inline'), 'inline', progress=False)
    procs = run_grid(six(tmp_path/'processes'), 'processes', workers=2, progress=False)
    dask = run_grid(six(tmp_path/'dask'), 'dask', client=client, progress=False)
    assert inline.results == procs.results == dask.results
    assert inline.computed == procs.computed == dask.computed == 6
    for b, kw in (('inline', {}), ('processes', dict(workers=2)), ('dask', dict(client=client))):
        again = run_grid(six(tmp_path/b), b, progress=False, **kw)
        assert (again.computed, again.reopened) == (0, 6) and again.results == inline.results, (b, again)


def _kill_first_committed(root:Path, timeout:float=60):
    t = time.time()
    while time.time() - t < timeout:
        for d in sorted(root.glob('*')):
            try: st, pid = json.loads((d/'state.json').read_text()), int((d/'pid').read_text())
            except (OSError, ValueError): continue
            if st['step'] >= 1 and pid != os.getpid():
                os.kill(pid, signal.SIGKILL); return d.name, pid
        time.sleep(0.02)
    raise TimeoutError('no job committed a step')


def test_killed_worker_is_survived(tmp_path, client):
    inline = run_grid(six(tmp_path/'inline'), 'inline', progress=False)
    jobs, box = six(tmp_path/'kill', step_s=0.3), {}
    th = threading.Thread(target=lambda: box.update(r=run_grid(jobs, 'dask', client=client, retries=2, progress=False)))
    th.start(); name, pid = _kill_first_committed(tmp_path/'kill'); th.join(120)
    kill = box['r']
    attempts = int((tmp_path/'kill'/name/'attempts').read_text())
    starts = json.loads((tmp_path/'kill'/name/'state.json').read_text())['starts']   # the step each attempt began at
    print(f"\nkill test: {len(jobs)} jobs on a 2-worker LocalCluster, worker {pid} running {name} killed after a committed "
          f"step; retries {kill.retries}, attempts of the killed job {attempts} (resumed at step {starts[-1]}), {kill.seconds:.1f} s")
    assert kill.results == inline.results and kill.computed == 6
    assert kill.retries >= 1 and attempts == 2 and len(starts) == 2 and starts[1] >= 1   # resumed from its commit
    rerun = run_grid(jobs, 'dask', client=client, progress=False)
    assert (rerun.computed, rerun.reopened) == (0, 6) and rerun.results == inline.results


def test_existing_scheduler_from_env(tmp_path, client, monkeypatch, capsys):
    monkeypatch.setenv('LATENTNB_DASK_ADDRESS', client.scheduler.address)
    r = run_grid(six(tmp_path/'env')[:2], 'dask', progress=False)      # connects to the running scheduler
    assert r.computed == 2 and 'Dask dashboard: http' in capsys.readouterr().out


def test_gpu_resources_on_a_local_cluster(tmp_path, capsys):
    jobs = product_jobs(demo_job, tmp_path, fixed=dict(steps=2), resources={'GPU': 1}, seed=range(2))
    r = run_grid(jobs, 'dask', workers=1, progress=False)       # the local worker is given {'GPU': 1}
    assert r.computed == 2 and 'Dask dashboard: http' in capsys.readouterr().out


def test_parts_version_changes_only_with_the_code_a_run_uses(tmp_path, monkeypatch):
    "Issue 41, item 4: a run keyed by its strategy's code is redone after a change to that strategy only"
    import importlib, sys
    from latentnb import search as S
    from latentnb.grid import code_parts, parts_version
    before = {n: parts_version(c, S.run_search) for n, c in S.STRATEGIES.items()}
    assert len(set(before.values())) == len(before)
    parts = code_parts(S.NSGA2Search, S.run_search)
    assert 'latentnb.search.nsga2.NSGA2Search.tell' in parts and 'latentnb.search.fitness.diversity' in parts
    assert not any(k.startswith('latentnb.search.Gift') for k in parts)
    pkg = tmp_path/'toystrats'; pkg.mkdir(); (pkg/'__init__.py').write_text('')
    src = ("STEPS = {'a': 1, 'b': 2}\n_CACHE = {}\ndef _a(): return STEPS['a']\ndef _b(): return STEPS['b']\n"
           "class A:\n    def ask(self): _CACHE['a'] = 1; return _a()\nclass B:\n    def ask(self): return _b()\n")
    (pkg/'m.py').write_text(src); monkeypatch.syspath_prepend(str(tmp_path))
    m = importlib.import_module('toystrats.m')
    v = lambda c: parts_version(c, package='toystrats')
    a0, b0 = v(m.A), v(m.B)
    m.A().ask(); assert v(m.A) == a0                                       # a cache's contents do not count
    (pkg/'m.py').write_text(src.replace('return _b()', 'return _b() + 0')); importlib.reload(m)
    assert (v(m.A), v(m.B) != b0) == (a0, True)                            # B's change redoes B's runs only
    (pkg/'m.py').write_text(src.replace("'b': 2", "'b': 3")); importlib.reload(m)
    assert v(m.A) != a0                                                    # a table both read: both redone
    sys.modules.pop('toystrats.m', None); sys.modules.pop('toystrats', None)


def test_parts_version_is_the_same_in_every_process():
    "A key that changed with the process's string hashing (a set's order) would never reopen a finished job"
    import os, subprocess, sys
    code = ("from latentnb.grid import parts_version; from latentnb.tools.cross import cross_cell; "
            "from latentnb.diffgan.rq import method_version; print(parts_version(cross_cell), method_version('DRfuzz'))")
    out = {subprocess.run([sys.executable, '-c', code], env=dict(os.environ, PYTHONHASHSEED=str(s)), capture_output=True,
                          text=True, check=True).stdout for s in (1, 2)}
    assert len(out) == 1, out
