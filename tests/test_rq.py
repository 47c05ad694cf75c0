"RQ runs on the grid of jobs (issue 32): local processes give the runs one process gives, and a rerun reopens every finished run."
import os, shutil
from pathlib import Path

import pytest

os.environ.setdefault('LATENTNB_PROFILE', 'ci')
from latentnb.config import load_config
from latentnb.diffgan.rq import rq_runs, rq_dir


def _counts(runs): return {k: (len(r.result.archive), int(r.keep.sum())) for k, r in runs.items()}


@pytest.fixture
def cfg():
    c = load_config('ci', seed_all=False)
    yield c
    for nb in ('test_rq_inline', 'test_rq_procs'): shutil.rmtree(rq_dir(c, nb), ignore_errors=True)


def test_processes_equal_inline_and_rerun_reopens(cfg):
    kw = dict(targets=[('mnist', 1)], budget_s=60.0, runs=1, n_seeds=200, max_evals=120, progress=False)
    inline = rq_runs(cfg, notebook='test_rq_inline', workers=1, **kw)
    procs = rq_runs(cfg, notebook='test_rq_procs', workers=2, backend='processes', **kw)
    assert set(inline) == set(procs) == {('mnist', 1, m, 0) for m in ('DiffGAN', 'DRfuzz')}
    assert _counts(procs) == _counts(inline)             # same seeds and evaluation cap (it binds before the clock): the same archives
    grid = rq_dir(cfg, 'test_rq_procs')/'_grid'
    marks = {p.parent.name: p.stat().st_mtime for p in grid.glob('*/done')}
    assert len(marks) == 2
    again = rq_runs(cfg, notebook='test_rq_procs', workers=2, backend='processes', **kw)
    assert _counts(again) == _counts(procs)
    assert {p.parent.name: p.stat().st_mtime for p in grid.glob('*/done')} == marks   # reopened, not rewritten


def test_unknown_backend_is_named(cfg):
    with pytest.raises(ValueError, match="Unknown backend 'spark'"):
        rq_runs(cfg, [('mnist', 1)], 1.0, runs=1, notebook='test_rq_inline', backend='spark', progress=False)


def test_runs_on_another_dataset(cfg):
    "A colour dataset (`$LATENTNB_DATASET=colour-mnist` in notebooks 41-44): both methods archive 3×32×32 inputs and the filter judges every one"
    runs = rq_runs(cfg, [('colour-mnist', 1)], budget_s=60.0, runs=1, notebook='test_rq_inline', n_seeds=100, max_evals=120, progress=False)
    assert set(runs) == {('colour-mnist', 1, m, 0) for m in ('DiffGAN', 'DRfuzz')}
    for k, r in runs.items():
        x = r.load(valid=False)['images']
        assert len(x) == len(r.keep) == r.result.unique and r.judged.all(), k
        assert len(x) > 0 and tuple(x.shape[1:]) == (3, 32, 32), (k, x.shape)   # seeds and the evaluation cap fix the runs: both find inputs
