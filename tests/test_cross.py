"The cross product's grid (notebook 90, latentnb.tools.cross): caps per generator, one job per cell, the near-duplicate-free representatives, label faithfulness, and the counts of a judged cell."
import os
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

os.environ.setdefault('LATENTNB_PROFILE', 'ci')
from latentnb.search.archive import Archive
from latentnb.config import load_config
from latentnb.tools.cross import cell_evals, cross_jobs, cross_strategies, faithful_to, judge_cell, near_free_index
from latentnb.search import STRATEGIES
import latentnb.sinvad, latentnb.giftbench, latentnb.diffgan.baseline   # the papers' strategies register on import


def test_slow_generators_get_their_own_cap():
    B = SimpleNamespace(n_evals=1000, n_evals_slow=100, slow_kinds=['DDIM'])
    assert (cell_evals(B, 'GAN'), cell_evals(B, 'DDIM')) == (1000, 100)


def test_one_job_per_cell_with_its_own_folder(tmp_path):
    B = load_config('ci', seed_all=False).budget('cross')
    jobs = cross_jobs('ci', tmp_path)
    assert len(jobs) == B.reps*len(B.objectives)*len(B.kinds)*len(cross_strategies())
    assert len({j.out_dir for j in jobs}) == len(jobs) and len({j.key for j in jobs}) == len(jobs)
    assert all(j.out_dir.parent == tmp_path for j in jobs)


def test_near_free_index_keeps_the_first_of_each_code():
    codes = np.array([[3, 1], [0, 0], [3, 1], [0, 0], [9, 9]], np.uint8)
    assert near_free_index(codes).tolist() == [0, 1, 4]
    assert near_free_index(np.zeros((0, 49), np.uint8)).tolist() == []


def test_faithfulness_follows_the_objective():
    j, a, b = [1, 2, 3, 4], [1, 0, 0, 4], [0, 2, 0, 4]
    assert faithful_to('differential', j, a, b).tolist() == [True, True, False, True]
    assert faithful_to('misclassification', j, a, b).tolist() == [False, True, False, True]
    with pytest.raises(ValueError, match='objective'): faithful_to('coverage', j, a, b)


def test_an_empty_archive_is_judged_as_nothing(tmp_path):
    r = judge_cell(Archive(tmp_path/'a'), 'differential', judges=None, n_judged=10, gd_n=4)
    assert r['judged'] == r['near_free'] == 0 and r['good'] == 0 and np.isnan(r['valid_share']) and np.isnan(r['gd'])


class _StubJudges:
    "Dark images: label 1, valid; bright: label 7, valid; grey: label 4, invalid"
    def verdicts(self, x):
        m = x.mean((1, 2, 3)).numpy()
        return pd.DataFrame(dict(label=np.where(m < .1, 1, np.where(m > .9, 7, 4)), valid=(m < .1) | (m > .9)))
    def features(self, x): return x.flatten(1)


def _archive(path):
    im = torch.zeros(4, 1, 28, 28, dtype=torch.uint8)
    im[1, 0, 0, 0] = 1          # a near duplicate of image 0 (other bytes, same code)
    im[2] = 255; im[3] = 128
    onehot = lambda l: torch.eye(10)[torch.tensor(l)]
    a = Archive(path)
    assert a.add(im, torch.zeros(4, 2), onehot([1, 1, 2, 3]), onehot([0, 0, 5, 4])) == 4
    a.commit(); return a


def test_a_cell_counts_its_near_duplicate_free_valid_faithful_failures(tmp_path):
    a = _archive(tmp_path/'a')
    d = judge_cell(a, 'differential', _StubJudges(), n_judged=10, gd_n=4)
    # representatives 0, 2, 3: judges say 1 (A's label, valid), 7 (neither model's, valid), 4 (B's label, invalid)
    assert (d['near_free'], d['judged'], d['valid'], d['faithful'], d['good']) == (3, 3, 2, 2, 1)
    m = judge_cell(a, 'misclassification', _StubJudges(), n_judged=10, gd_n=4)
    assert (m['faithful'], m['good']) == (1, 0)     # only image 3 keeps its expected label, and it is invalid


def test_a_sample_of_the_representatives_is_scaled_to_the_cell(tmp_path):
    d = judge_cell(_archive(tmp_path/'a'), 'differential', _StubJudges(), n_judged=2, gd_n=4, seed=1)
    assert d['judged'] == 2 and d['near_free'] == 3
    assert d['valid'] in (1.5, 3.0) and d['good'] in (0.0, 1.5)


def test_another_dataset_gives_its_own_cells(tmp_path):
    "`$LATENTNB_DATASET` (notebook 90 passes it): colour-mnist's generators decode 3×32×32 images, its jobs carry the dataset and share no key with MNIST's"
    from latentnb.tools.cross import cross_context
    from latentnb.data import dataset_info
    ctx = cross_context('ci', 'colour-mnist')
    g = ctx['gens']['GAN']
    x = g.decode(g.sample(2, torch.Generator().manual_seed(0)))
    assert tuple(x.shape) == (2, *dataset_info('colour-mnist').shape) == (2, 3, 32, 32)
    assert tuple(ctx['pool'][0].shape[1:]) == (3, 32, 32)
    jobs, mnist = cross_jobs('ci', tmp_path, dataset='colour-mnist'), cross_jobs('ci', tmp_path)
    assert {j.kwargs['dataset'] for j in jobs} == {'colour-mnist'} and len(jobs) == len(mnist)
    assert not {j.key for j in jobs} & {j.key for j in mnist}

def test_the_cross_product_compares_the_strategies_that_run_on_any_generator():
    "A paper's own-space search (Argus's, over a model's codes) is registered but not a cell of the cross product"
    assert 'argus' in STRATEGIES and 'argus' not in cross_strategies()
    assert set(cross_strategies()) == {'random', 'nsga2', 'sinvad_ga', 'hill_climb', 'gift_ga', 'interpolation', 'pixel_mutation'}
