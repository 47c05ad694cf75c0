"The Argus sweeps on the grid (notebook 60, latentnb.argus): a small grid runs in this process and a rerun reopens every job; a job's result is a direct call's."
import json
import os

import pandas as pd
import pytest
import torch

os.environ.setdefault('LATENTNB_PROFILE', 'ci')
from latentnb.argus import (argus_classifiers, argus_eval, argus_metrics, argus_pool, argus_seeds, ablation_jobs, balanced_holdout,
                            eval_job, load_argus, load_eval, protocol_jobs, retrain_gain, retrain_jobs, rq1_jobs, white_box,
                            white_box_job, white_box_jobs, generate, pick_per_class)
from latentnb.blackbox import predict
from latentnb.config import load_config
from latentnb.data import load_dataset
from latentnb.grid import run_grid

TINY = dict(n_pool=300, n_seeds=20, n_partners=1)   # the ci LeNets are barely trained: enough seeds that some are right
def same(a, b): return json.dumps(a) == json.dumps(b)   # NaN (a metric without failures) equals NaN

CFG = load_config('ci', seed=0, seed_all=False)   # the jobs' profile and seed, whatever LATENTNB_PROFILE says


def test_a_small_grid_runs_inline_and_a_rerun_reopens_every_job(tmp_path):
    jobs = rq1_jobs('ci', tmp_path, ['mnist'], [0.1, 0.2], keep_seeds=2, **TINY)
    first = run_grid(jobs, backend='inline', progress=False)
    assert (first.computed, first.reopened) == (len(jobs), 0)
    again = run_grid(rq1_jobs('ci', tmp_path, ['mnist'], [0.1, 0.2], keep_seeds=2, **TINY), backend='inline', progress=False)
    assert (again.computed, again.reopened) == (0, len(jobs))
    assert same(again.results, first.results)
    assert all(j.out_dir.parent == tmp_path/'rq1' for j in jobs)


def test_other_arguments_are_another_job(tmp_path):
    a = rq1_jobs('ci', tmp_path, ['mnist'], [0.2], **TINY)[0]
    b = rq1_jobs('ci', tmp_path, ['mnist'], [0.2], **{**TINY, 'n_seeds': 5})[0]
    assert a.out_dir == b.out_dir and a.key != b.key          # same folder, other key: the grid recomputes it


def test_eval_job_is_argus_eval(tmp_path):
    r = eval_job(tmp_path, 'ci', 0, 'mnist', 0.2, keep_seeds=2, draw_seed=7, **TINY)
    xp, yp = argus_pool('mnist', TINY['n_pool'], 0)
    xs, ys = argus_seeds((xp, yp), TINY['n_seeds'], 7)
    d = argus_eval(load_argus('mnist', 0.2, cfg=CFG), argus_classifiers('mnist', CFG), xs, ys, xp, yp, lam=0.2, n_partners=1, seed=7, keep_seeds=2)
    assert same(r['metrics'], d['metrics'])
    e = load_eval(tmp_path)
    assert same(e['metrics'], d['metrics'])
    pd.testing.assert_frame_equal(e['per_seed'], d['per_seed'], check_exact=True)
    assert torch.equal(e['recon'], d['recon']) and all(torch.equal(e['kept'][k], d['kept'][k]) for k in d['kept'])


def test_white_box_job_is_a_direct_call(tmp_path):
    r = white_box_job(tmp_path, 'ci', 0, 'LeNet-5', 'deepxplore', **TINY)
    c = argus_classifiers('mnist', CFG)
    xs, ys = argus_seeds(argus_pool('mnist', TINY['n_pool'], 0), TINY['n_seeds'], 0)
    g = white_box(c['LeNet-5'], xs, ys, 'deepxplore', budget=9, others=[c['LeNet-4']], seed=0)
    assert same({k: v for k, v in r.items() if k != 'seconds'}, dict(model='LeNet-5', method='DeepXplore', **argus_metrics(g, xs, ys, c['LeNet-5'])))


def test_retrain_job_is_a_direct_call(tmp_path):
    job = retrain_jobs('ci', tmp_path, ['mnist'], reps=1, per_class=2, lambdas=[0.2], epochs=1, n_train=300)[1]   # rep 0, LeNet-5
    assert job.kwargs['model'] == 'LeNet-5'
    job.out_dir.mkdir(parents=True)
    rows = job.fn(job.out_dir, **job.kwargs)
    clf = argus_classifiers('mnist', CFG)['LeNet-5']
    xtr, ytr = load_dataset('mnist', 'train', n=300); xt, yt = load_dataset('mnist', 'test')
    hold, rest = balanced_holdout(yt, 2, seed=0); sidx, _ = balanced_holdout(ytr, 1, seed=0)
    gen = generate(load_argus('mnist', 0.2, cfg=CFG), xtr[sidx], ytr[sidx], xtr, ytr, lam=0.2, n_partners=1, seed=0)
    xa, ya, frac = pick_per_class(gen, 2, seed=0, clf=clf)
    want = retrain_gain(clf, xtr, ytr, xa, ya, xt[rest], yt[rest], epochs=1, seed=0)
    assert [r['method'] for r in rows] == ['fine-tune only', 'Random', 'Argus λ=0.2']
    assert {k: rows[2][k] for k in want} == want and rows[2]['added_failing'] == frac
    assert rows[1]['added_failing'] == float((predict(clf, xt[hold]) != yt[hold]).float().mean())


def test_the_builders_follow_the_loops_they_replace(tmp_path):
    p = protocol_jobs('ci', tmp_path, [0.1, 0.2], reps=2, **TINY)
    assert [(j.kwargs['draw_seed'], j.kwargs['lam']) for j in p] == [(1000, 0.1), (1000, 0.2), (1001, 0.1), (1001, 0.2)]
    w = white_box_jobs('ci', tmp_path, **TINY)
    assert [(j.kwargs['model'], j.kwargs['method']) for j in w] == [(m, k) for m in ('LeNet-4', 'LeNet-5') for k in ('dlfuzz', 'deepxplore', 'adapt', 'diffchaser')]
    a = ablation_jobs('ci', tmp_path, lambdas=[0.1, 0.2], variants=['argus'], **TINY)
    assert [j.name for j in a] == ['mnist-lam0.1-argus', 'mnist-lam0.2-argus']
    r = retrain_jobs('ci', tmp_path, reps=2)
    assert [(j.kwargs['rep'], j.kwargs['model']) for j in r] == [(0, 'LeNet-4'), (0, 'LeNet-5'), (1, 'LeNet-4'), (1, 'LeNet-5')]
    keys = [j.key for j in p + w + a + r]
    assert len(set(keys)) == len(keys) and len({j.out_dir for j in p + w + a + r}) == len(keys)
    assert all(j.fn.__module__ == 'latentnb.argus.protocol' for j in p + w + a + r)
