"The SINVAD sweeps as `latentnb.grid` jobs (notebooks 52 and 53, latentnb.sinvad): a ci-sized grid runs inline, a rerun reopens every job, and the saved results load back equal to the GA run directly."
import os

import pytest
import torch
from torch import nn

os.environ.setdefault('LATENTNB_PROFILE', 'ci')
from latentnb.blackbox import predict, predict_proba
from latentnb.config import load_config
from latentnb.data import load_dataset
from latentnb.grid import is_done, run_grid
from latentnb.sinvad import (RESULT_FIELDS, boundary_jobs, detection_attempts, detection_classifiers, detection_jobs, ga_search,
                             latent_space, load_result, model_under_test, pixel_space, save_result)
from latentnb.vae import load_vae


def same_result(r, o):
    for f in RESULT_FIELDS: assert torch.equal(getattr(r, f), getattr(o, f)), f
    assert r.history == o.history


def test_result_saves_and_loads_back_equal(tmp_path):
    torch.manual_seed(0)
    clf, x = nn.Sequential(nn.Flatten(), nn.Linear(4, 3)).eval(), torch.rand(5, 1, 2, 2)
    r = ga_search(pixel_space((1, 2, 2)), clf, x, pop=6, gens=3)
    save_result(r, tmp_path, seeds=torch.arange(5), p=predict_proba(clf, x))
    r2, extra = load_result(tmp_path)
    same_result(r2, r)
    assert torch.equal(extra['seeds'], torch.arange(5)) and torch.equal(extra['p'], predict_proba(clf, x))


def test_attempts_cover_every_other_class():
    torch.manual_seed(0)
    clf, x = nn.Sequential(nn.Flatten(), nn.Linear(4, 3)).eval(), torch.rand(12, 1, 2, 2)
    seed_idx, src, tgt = detection_attempts(clf, x, predict(clf, x), 2, K=3)
    assert len(src) == len(tgt) == 2*len(seed_idx) and (src != tgt).all()


def run_twice(jobs):
    "Run `jobs` inline, then again: the second run must reopen every one of them"
    gr = run_grid(jobs, backend='inline', retries=1, progress=False)
    assert gr.computed == len(jobs) and all(is_done(j) for j in jobs)
    gr2 = run_grid(jobs, backend='inline', retries=1, progress=False)
    assert (gr2.computed, gr2.reopened) == (0, len(jobs)) and gr2.results == gr.results
    return gr


def test_boundary_grid_reopens_and_matches_the_direct_search(tmp_path):
    cfg = load_config('ci', seed_all=False); B = cfg.budget('sinvad_boundary')
    jobs = boundary_jobs('ci', tmp_path, seed=cfg.seed)
    assert [j.kwargs['dataset'] for j in jobs] == list(B.datasets) and len({j.key for j in jobs}) == len(jobs)
    gr = run_twice(jobs)
    ds, job, res = B.datasets[0], jobs[0], gr.results[0]
    clf, vae = model_under_test(ds, cfg=cfg), load_vae(ds, 'mlp', cfg=cfg, progress=False)
    xt, yt = load_dataset(ds, 'test', n=B.n_test)
    r, t = load_result(job.out_dir)
    assert torch.equal(t['p_test'], predict_proba(clf, xt)) and res['acc'] == float((t['p_test'].argmax(1) == yt).float().mean())
    same_result(r, ga_search(latent_space(vae), clf, xt[t['seeds']], pop=B.population, gens=B.gens, seed=cfg.seed))
    assert res['found'] == int(r.found.sum()) and res['n_seeds'] == len(t['seeds'])


def test_detection_grid_reopens_and_matches_the_direct_search(tmp_path):
    cfg = load_config('ci', seed_all=False); B = cfg.budget('sinvad_detection')
    models, _ = detection_classifiers(B.dataset, cfg=cfg, progress=False)
    jobs = detection_jobs('ci', tmp_path, seed=cfg.seed, dataset=B.dataset)
    assert [j.kwargs['alpha'] for j in jobs] == list(models) and len({j.key for j in jobs}) == len(jobs)
    run_twice(jobs)
    xt, yt = load_dataset(B.dataset, 'test')
    seed_idx, src, tgt = detection_attempts(models[0.0], xt, yt, B.n_attempts)
    space = latent_space(load_vae(B.dataset, 'mlp', cfg=cfg, progress=False))
    job = jobs[-1]
    r, t = load_result(job.out_dir)
    for k, v in dict(seed_idx=seed_idx, src=src, tgt=tgt).items(): assert torch.equal(t[k], v), k
    same_result(r, ga_search(space, models[job.kwargs['alpha']], xt[seed_idx].repeat_interleave(9, 0), target=tgt,
                             pop=B.population, gens=B.gens, seed=cfg.seed))
