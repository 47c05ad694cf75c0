"Table III on the grid (notebook 80, latentnb.giftbench): a GiftResult saved and loaded back, a tiny grid of toy jobs run inline and reopened, and the jobs of the ci profile."
import json, math, os

import pytest
import torch

os.environ.setdefault('LATENTNB_PROFILE', 'ci')
import latentnb.giftbench.core as gb
from latentnb.demo import toy_classifier, toy_generator
from latentnb.giftbench import (GIFT_RESULT_FILE, TABLE3_ROW_FILE, GiftResult, load_gift_result, run_giftbench,
                                save_gift_result, table3_cell, table3_collect)
from latentnb.grid import Job, is_done, run_grid


toy_clf = toy_classifier   # class = round(10 × mean brightness) (latentnb.demo)
def toy_gen(): return toy_generator({'low': 1e-4, 'high': 0.5})   # a flat image whose brightness is z0

def toy_judge(x, y): return torch.ones(len(x), dtype=torch.bool), torch.as_tensor(y) % 2 == 0
toy_judge.name = 'toy judge'


def assert_same(a:GiftResult, b:GiftResult):
    for f in a.__dataclass_fields__:
        x, y = getattr(a, f), getattr(b, f)
        if isinstance(x, torch.Tensor): torch.testing.assert_close(x, y, rtol=0, atol=0, equal_nan=True); assert x.dtype == y.dtype
        else: assert x == y and type(x) == type(y), (f, x, y)


def same_row(a:dict, b:dict, skip=()) -> bool:
    "Two rows equal key by key (NaN equal to NaN), leaving out the keys `skip`"
    a, b = ({k: v for k, v in r.items() if k not in skip} for r in (a, b))
    return list(a) == list(b) and all(a[k] == b[k] or (isinstance(a[k], float) and math.isnan(a[k]) and math.isnan(b[k])) for k in a)


@pytest.fixture
def toy_context(monkeypatch):
    "`table3_cell` on the toy generator, classifier and judge (its context as `table3_context` would build it)"
    ctx = dict(gen=toy_gen(), clf=toy_clf, judge=toy_judge)
    monkeypatch.setattr(gb, 'table3_context', lambda profile, dataset, kind: ctx)
    return ctx


def toy_jobs(root):
    return [Job(table3_cell, dict(dataset='toy', kind=k, step=s, n_seeds=10, population=6, generations=30, seed=0, profile='ci'),
                root/f'toy-{s}-{k}', version='toy') for s in ('low', 'high') for k in ('a', 'b')]


def test_a_saved_gift_result_loads_back_equal(tmp_path):
    _, res = run_giftbench(toy_gen(), toy_clf, 'toy', 10, 6, 30, 'high', progress=False)
    res.step = torch.tensor(res.step, dtype=torch.float64).numpy()[()]   # a numpy scalar is stored as a Python number
    back = load_gift_result(save_gift_result(res, tmp_path/'sub'/'r.pt'))
    assert isinstance(back.step, float) and back.step == float(res.step)
    res.step = float(res.step)
    assert_same(back, res)
    assert back.best_margin.isnan().any() and back.failed.any()   # NaN after a stop and failures survive
    assert not list(tmp_path.glob('sub/.*'))   # no temporary file left


def test_a_tiny_grid_runs_inline_then_reopens_every_job(tmp_path, toy_context):
    jobs = toy_jobs(tmp_path)
    g1 = run_grid(jobs, progress=False, retries=1)
    assert (g1.computed, g1.reopened) == (len(jobs), 0) and all(is_done(j) for j in jobs)
    g2 = run_grid(jobs, progress=False)
    assert (g2.computed, g2.reopened) == (0, len(jobs))
    rows, results, wall = table3_collect(jobs, g2)
    assert list(results) == [('toy', s, k) for s in ('low', 'high') for k in ('a', 'b')] and list(wall) == [('toy', 'a'), ('toy', 'b')]
    assert all(same_row(r, o['row']) for r, o in zip(rows, g1.results))
    assert all(r['budget'] == 30 and r['population'] == 6 and r['n_candidates'] == 10 and r['judged_by'] == 'toy judge' for r in rows)
    # a job's result is that of the plain loop of notebook 82 (same seed, same order)
    for j, r in zip(jobs, rows):
        row, res = run_giftbench(toy_gen(), toy_clf, 'toy', 10, 6, 30, j.kwargs['step'], judge=toy_judge, seed=0, progress=False)
        got = results['toy', j.kwargs['step'], j.kwargs['kind']]
        res.seconds = got.seconds   # wall time: the one field that differs
        assert_same(got, res)
        assert same_row(row, {k: v for k, v in r.items() if k not in ('budget', 'population', 'n_candidates')}, skip=('seconds',))
    assert rows[2]['n_misclassified'] > 0   # the high step fails seeds: the judge ran
    saved = json.loads((jobs[2].out_dir/TABLE3_ROW_FILE).read_text())
    assert saved['row']['n_misclassified'] == rows[2]['n_misclassified'] and saved['wall_seconds'] >= 0
    assert (jobs[2].out_dir/GIFT_RESULT_FILE).exists()


def test_the_ci_jobs_have_their_own_folders_and_keys(tmp_path):
    from latentnb.config import load_config
    B = load_config('ci', seed_all=False).budget('giftbench')
    jobs = gb.table3_jobs('ci', tmp_path)
    assert len(jobs) == 2*len(B.table3_datasets)*3
    assert len({j.out_dir for j in jobs}) == len(jobs) and len({j.key for j in jobs}) == len(jobs)
    assert all(j.out_dir.parent == tmp_path and j.fn is table3_cell for j in jobs)
    assert [j.kwargs['population'] for j in jobs if j.kwargs['kind'] == 'DDIM'] == [int(B.ddim_population)]*2*len(B.table3_datasets)
    assert gb.table3_jobs('ci', tmp_path)[0].key == jobs[0].key   # the same code and weights: the same key
    assert [j.kwargs['kind'] for j in jobs[:3]] == list(gb.GENERATORS) == ['VAE', 'cGAN', 'DDIM']   # the core's kinds
    assert gb.table3_budget(B, 'ddim') == gb.table3_budget(B, 'DDIM') != gb.table3_budget(B, 'VAE')   # any case
