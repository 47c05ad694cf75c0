"`tools/reproduce.py`'s schedule: which notebooks wait for which, and which go first"
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location('reproduce', ROOT/'tools'/'reproduce.py')
rp = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(rp)
NBS = sorted(p.name for p in (ROOT/'nbs').glob('[0-9]*.ipynb'))


def test_named_notebooks_exist():
    for n in set(rp.EXCLUSIVE) | set(rp.AFTER) | {m for v in rp.AFTER.values() for m in v}:
        assert n in NBS, f"tools/reproduce.py names {n}, which is not in nbs/"


def test_sections_run_in_order():
    d = rp.dependencies(NBS)
    assert d['00_config.ipynb'] == set() and d['10_zoo.ipynb'] == set() and d['40_baseline.ipynb'] == set()   # each section starts at once
    assert d['01_data.ipynb'] == {'00_config.ipynb'}
    assert d['42_rq2_validity.ipynb'] == {'41_rq1_counts.ipynb'}                # 42-44 reopen 41's runs
    assert d['61_argus_rq.ipynb'] == {'60_argus_protocol.ipynb'}
    test = {'11_gan.ipynb', '50_vae.ipynb', '60_argus.ipynb', '81_giftbench_training.ipynb'}
    assert test <= d['90_cross_product.ipynb']
    for n in NBS:   # no notebook waits for a later one, so the schedule cannot deadlock
        assert all(m < n for m in d[n]), (n, d[n])


def test_subset_keeps_only_selected_dependencies():
    d = rp.dependencies(['43_rq3_diversity.ipynb', '61_argus_rq.ipynb', '90_cross_product.ipynb'])
    assert d == {'43_rq3_diversity.ipynb': set(), '61_argus_rq.ipynb': set(), '90_cross_product.ipynb': set()}


def test_longest_chain_first():
    names = ['10_a.ipynb', '40_b.ipynb', '41_c.ipynb', '60_d.ipynb']
    d = rp.dependencies(names)
    s = rp.chain_seconds(names, d, {'10_a.ipynb': 5, '40_b.ipynb': 10, '41_c.ipynb': 100, '60_d.ipynb': 50})
    assert s == {'10_a.ipynb': 5, '40_b.ipynb': 110, '41_c.ipynb': 100, '60_d.ipynb': 50}
    assert rp.chain_seconds(['x.ipynb'], {'x.ipynb': set()}, {}) == {'x.ipynb': 60.0}   # never run: 60 s


def test_bad_jobs_is_refused(monkeypatch, capsys):
    monkeypatch.setattr('sys.argv', ['reproduce.py', '--jobs', '0'])
    with pytest.raises(SystemExit, match='--jobs must be at least 1'): rp.main()
