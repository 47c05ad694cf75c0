"The cross product's grid (notebook 90, latentnb.cross): caps per generator, one job per cell, judging an empty archive."
import os
from types import SimpleNamespace

import numpy as np

os.environ.setdefault('LATENTNB_PROFILE', 'ci')
from latentnb.archive import Archive
from latentnb.config import load_config
from latentnb.cross import cell_evals, cross_jobs, judge_cell
from latentnb.strategies import STRATEGIES


def test_slow_generators_get_their_own_cap():
    B = SimpleNamespace(n_evals=500, n_evals_slow=60, slow_kinds=['DDIM'])
    assert (cell_evals(B, 'GAN'), cell_evals(B, 'DDIM')) == (500, 60)


def test_one_job_per_cell_with_its_own_folder(tmp_path):
    B = load_config('ci', seed_all=False).budget('cross')
    jobs = cross_jobs('ci', tmp_path)
    assert len(jobs) == B.reps*2*len(B.kinds)*len(STRATEGIES)
    assert len({j.out_dir for j in jobs}) == len(jobs) and len({j.key for j in jobs}) == len(jobs)
    assert all(j.out_dir.parent == tmp_path for j in jobs)


def test_an_empty_archive_is_judged_as_nothing(tmp_path):
    r = judge_cell(Archive(tmp_path/'a'), 'differential', judges=None, n_judged=10, gd_n=4)
    assert r['judged'] == 0 and np.isnan(r['valid_share']) and np.isnan(r['gd'])
