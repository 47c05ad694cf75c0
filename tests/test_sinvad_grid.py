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
from latentnb.sinvad import (RESULT_FIELDS, boundary_jobs, detection_attempts, detection_classifiers, detection_jobs, escape_search,
                             ga_search, latent_space, load_result, mix_name, mix_spec, mixed_directions, model_under_test, pixel_space,
                             save_result, stall_generations)
from latentnb.checkpoints import checkpoint_entry, spec_diff
from latentnb.generators.vae import load_vae


def same_result(r, o):
    for f in RESULT_FIELDS: assert torch.equal(getattr(r, f), getattr(o, f)), f
    assert r.history == o.history


def test_result_saves_and_loads_back_equal(tmp_path):
    torch.manual_seed(0)
    clf, x = nn.Sequential(nn.Flatten(), nn.Linear(4, 3)).eval(), torch.rand(5, 1, 2, 2)
    r = ga_search(pixel_space((1, 2, 2)), clf, x, pop=6, generations=3)
    save_result(r, tmp_path, seeds=torch.arange(5), p=predict_proba(clf, x))
    r2, extra = load_result(tmp_path)
    same_result(r2, r)
    assert torch.equal(extra['seeds'], torch.arange(5)) and torch.equal(extra['p'], predict_proba(clf, x))


def test_attempts_are_n_per_direction_from_right_classified_seeds():
    torch.manual_seed(0)
    clf, x = nn.Sequential(nn.Flatten(), nn.Linear(4, 3)).eval(), torch.rand(40, 1, 2, 2)
    y = predict(clf, x)
    dirs = [(int(c), (int(c) + 1) % 3) for c in y.unique()]
    seed_idx, src, tgt = detection_attempts(clf, x, y, 5, dirs, K=3, seed=1)
    assert len(seed_idx) == len(src) == len(tgt) == 5*len(dirs) and (src != tgt).all() and torch.equal(y[seed_idx], src)
    again = detection_attempts(clf, x, y, 2, dirs, K=3, seed=1)[0]   # fewer attempts: the first seeds of the same order
    assert torch.equal(again, seed_idx.view(len(dirs), 5)[:, :2].flatten())
    with pytest.raises(ValueError, match='two different classes'): detection_attempts(clf, x, y, 1, [(0, 0)], K=3)


def test_mixed_classifiers_carry_their_spec():
    cfg = load_config('ci', seed_all=False); B = cfg.budget('sinvad_detection')
    models, pairs = detection_classifiers(B.dataset, cfg=cfg, progress=False)
    assert pairs == [tuple(p) for p in B.pairs] and list(models) == sorted({0.0, *B.alphas})
    for a in models:
        e = checkpoint_entry(mix_name(B.dataset, a), cfg=cfg)
        assert not spec_diff(e.get('spec'), mix_spec(B.dataset, a, cfg)), a
    assert mix_spec(B.dataset, 0.3, cfg)['pairs'] == [list(p) for p in B.pairs] and mix_spec(B.dataset, 0.0, cfg)['pairs'] == []
    assert mix_spec(B.dataset, 0.3, cfg, model_seed=1)['seed'] == cfg.seed + 1


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
    assert [j.kwargs['rule'] for j in jobs] == ['authors']*len(jobs)
    both = boundary_jobs('ci', tmp_path, seed=cfg.seed, rules=('authors', 'guided'))
    assert [(j.kwargs['dataset'], j.kwargs['rule']) for j in both] == [(ds, r) for ds in B.datasets for r in ('authors', 'guided')]
    assert both[0].key == jobs[0].key and both[1].out_dir.name == f'boundary-{B.datasets[0]}-guided' and len({j.key for j in both}) == len(both)
    gr = run_twice(jobs)
    ds, job, res = B.datasets[0], jobs[0], gr.results[0]
    clf, vae = model_under_test(ds, cfg=cfg), load_vae(ds, 'mlp', cfg=cfg, progress=False)
    xt, yt = load_dataset(ds, 'test', n=B.n_test)
    r, t = load_result(job.out_dir)
    assert torch.equal(t['p_test'], predict_proba(clf, xt)) and res['acc'] == float((t['p_test'].argmax(1) == yt).float().mean())
    same_result(r, ga_search(latent_space(vae), clf, xt[t['seeds']], pop=B.population, generations=B.generations, seed=cfg.seed,
                             rule='authors'))   # RQ2's primary rows: the authors' ranking and output
    assert res['found'] == int(r.found.sum()) and res['n_seeds'] == len(t['seeds'])


def test_detection_grid_reopens_and_matches_the_direct_search(tmp_path):
    cfg = load_config('ci', seed_all=False); B = cfg.budget('sinvad_detection')
    models, pairs = detection_classifiers(B.dataset, cfg=cfg, progress=False)
    jobs = detection_jobs('ci', tmp_path, seed=cfg.seed, dataset=B.dataset)
    assert [(j.kwargs['model_seed'], j.kwargs['alpha']) for j in jobs] == [(k, a) for k in range(B.model_seeds) for a in models]
    assert len({j.key for j in jobs}) == len({j.out_dir for j in jobs}) == len(jobs)
    assert [j.kwargs['check'] for j in jobs] == [j.kwargs['model_seed'] == 0 and j.kwargs['alpha'] in (min(models), max(models)) for j in jobs]
    gr = run_twice(jobs)
    xt, yt = load_dataset(B.dataset, 'test')
    space = latent_space(load_vae(B.dataset, 'mlp', cfg=cfg, progress=False))
    job, res = next((j, r) for j, r in zip(jobs, gr.results) if j.kwargs['model_seed'] == 0 and j.kwargs['check'] and j.kwargs['alpha'] > 0)
    for name, n, dirs, generations in (('mixed', B.n_attempts, mixed_directions(pairs), B.generations),
                                       ('matrix', B.n_matrix, None, B.generations),
                                       ('check', B.n_check, mixed_directions(pairs), stall_generations()),
                                       ('check-guided', B.n_check, mixed_directions(pairs), stall_generations())):
        seed_idx, src, tgt = detection_attempts(models[0.0], xt, yt, n, dirs, seed=cfg.seed)
        r, t = load_result(job.out_dir, name)
        for k, v in dict(seed_idx=seed_idx, src=src, tgt=tgt).items(): assert torch.equal(t[k], v), (name, k)
        rule = 'guided' if name.endswith('-guided') else 'authors'
        same_result(r, escape_search(space, models[job.kwargs['alpha']], xt[seed_idx], tgt, B, cfg.seed, generations, rule=rule))
        assert res[name] == dict(attempts=len(tgt), escaped=int(r.found.sum()), generations=generations)


def test_rq3_models_follow_the_dataset():
    "`zoo_model` builds the MNIST LeNet-5 weight for weight as before; other class counts and shapes come from the dataset"
    from latentnb.sinvad import zoo_model, check_pairs
    from latentnb.zoo import LeNet5
    torch.manual_seed(3); a = zoo_model(LeNet5, (1, 28, 28), 10)
    torch.manual_seed(3); b = LeNet5()
    assert list(a.state_dict()) == list(b.state_dict()) and all(torch.equal(a.state_dict()[k], b.state_dict()[k]) for k in a.state_dict())
    assert zoo_model(LeNet5, (1, 28, 28), 26)(torch.rand(2, 1, 28, 28)).shape == (2, 26)     # EMNIST letters
    with pytest.raises(ValueError, match='is not supported; accepted'): zoo_model(LeNet5, (3, 32))
    cfg = load_config('ci', seed_all=False)
    assert check_pairs([[0, 20]], K=26) == [(0, 20)]
    assert mix_spec('emnist-letters', 0.1, cfg)['pairs'] == mix_spec('mnist', 0.1, cfg)['pairs']


def test_load_vae_builds_for_a_colour_dataset():
    from latentnb.generators.vae import vae_spec, vae_name
    cfg = load_config('ci', seed_all=False)
    v = load_vae('colour-mnist', 'conv', cfg=cfg, progress=False)
    assert v.img_shape == (3, 32, 32) and v.reconstruct(torch.rand(2, 3, 32, 32)).shape == (2, 3, 32, 32)
    assert checkpoint_entry(vae_name('colour-mnist', 'conv', v.latent_dim), cfg=cfg)['spec']['img_shape'] == [3, 32, 32]
    assert 'img_shape' not in vae_spec('mnist', 'conv', v.latent_dim, cfg) and 'img_shape' not in vae_spec('emnist-letters', 'mlp', 400, cfg)
    assert pixel_space('colour-mnist').shape == (3, 32, 32)
