"""`make smoke` as a grid of notebook jobs: rows per notebook, a rerun reopens the notebooks that finished ok, runs the
failed and the changed ones again, and keeps each row's stamp of the run that computed it."""
import importlib.util, json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from latentnb.grid import run_jobs

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def smoke(tmp_path, monkeypatch):
    "tools/smoke.py as a module, its scratch copy in tmp_path holding a tiny library and two notebooks (one fails)"
    spec = importlib.util.spec_from_file_location('smoke_tool', ROOT/'tools'/'smoke.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, 'SMOKE', tmp_path/'smoke'); monkeypatch.setattr(mod, 'TREE', tmp_path/'smoke'/'tree')
    lib, nbs = mod.TREE/'latentnb', mod.TREE/'nbs'
    lib.mkdir(parents=True); nbs.mkdir()
    (lib/'core.py').write_text('X = 1\n'); (lib/'profiles.toml').write_text('[a]\nn = {ci = 1}\n')
    nbformat.write(new_notebook(cells=[new_code_cell("import os\nassert os.environ['LATENTNB_PROFILE'] == 'paper'")]), nbs/'00_good.ipynb')
    nbformat.write(new_notebook(cells=[new_code_cell("raise ValueError('broken')")]), nbs/'01_bad.ipynb')
    return mod


def run(mod, commit):
    nbs = sorted((mod.TREE/'nbs').glob('*.ipynb'))
    jobs = mod.smoke_jobs(nbs, 'paper-x0.001', {'LATENTNB_PROFILE': 'paper'})
    g = run_jobs(jobs, desc='smoke', progress=False, retries=0)
    log = mod.SMOKE/'log.json'
    rows = mod.collect(jobs, dict(profile='paper', scale=0.001, commit=commit, device='cpu', standins=''), log)
    assert json.loads(log.read_text()) == sorted(rows.values(), key=lambda r: r['name'])
    return g, rows


def test_rows_reopen_and_rerun(smoke):
    g, rows = run(smoke, 'aaa')
    assert (g.computed, g.reopened) == (2, 0)
    assert rows['00_good.ipynb']['ok'] and not rows['01_bad.ipynb']['ok']
    assert rows['01_bad.ipynb']['error'] == 'ValueError: broken'
    assert {r['commit'] for r in rows.values()} == {'aaa'}
    assert (smoke.SMOKE/'jobs'/'paper-x0.001'/'01_bad'/'01_bad.ipynb').exists()   # the executed copy shows the failing cell
    g, rows = run(smoke, 'bbb')                     # the failed notebook runs again, the good one is reopened with its stamp
    assert (g.computed, g.reopened) == (1, 1)
    assert (rows['00_good.ipynb']['commit'], rows['01_bad.ipynb']['commit']) == ('aaa', 'bbb')
    (smoke.TREE/'latentnb'/'core.py').write_text('X = 2\n')   # a library change recomputes every notebook
    g, rows = run(smoke, 'ccc')
    assert (g.computed, g.reopened) == (2, 0) and {r['commit'] for r in rows.values()} == {'ccc'}
