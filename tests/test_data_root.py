"""Where an install finds its data (`find_root`), settings checked by name, `load_dataset`'s `n`, a read-only data folder,
and an installed copy of the package."""
import errno, os, re, shutil, subprocess, sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault('LATENTNB_PROFILE', 'ci')
from latentnb import data
from latentnb.config import check_seed, find_root, is_checkout, load_config, user_cache_dir
from latentnb.data import fetch_dataset, load_dataset

ROOT = Path(__file__).resolve().parents[1]   # the checkout holding this test


@pytest.fixture
def clean_env(monkeypatch):
    "No LATENTNB_ROOT, no XDG_CACHE_HOME: each test sets what it checks"
    for k in ('LATENTNB_ROOT', 'XDG_CACHE_HOME', 'LATENTNB_SEED', 'LATENTNB_THREADS', 'LATENTNB_TRAIN'):
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


# --- find_root: each branch ------------------------------------------------------------------------------------------
def test_root_from_variable(clean_env, tmp_path):
    clean_env.setenv('LATENTNB_ROOT', str(tmp_path))
    clean_env.chdir(ROOT/'nbs')
    assert find_root() == tmp_path.resolve()                      # the variable wins over the checkout around the cwd
    assert load_config(seed_all=False).root == tmp_path.resolve()


@pytest.mark.parametrize('what, msg', [('nope', 'does not exist'), ('file', 'is a file')])
def test_root_variable_must_be_a_folder(clean_env, tmp_path, what, msg):
    (tmp_path/'file').write_text('x')
    clean_env.setenv('LATENTNB_ROOT', str(tmp_path/what))
    with pytest.raises(OSError, match=f"^LATENTNB_ROOT='{re.escape(str(tmp_path/what))}' {msg}; it must name an existing folder"):
        load_config(seed_all=False)


def test_root_checkout_above_cwd(clean_env, tmp_path):
    clean_env.chdir(ROOT/'nbs')
    assert find_root(package=tmp_path/'latentnb') == ROOT and is_checkout(ROOT)


def test_root_checkout_above_package(clean_env, tmp_path):
    "The editable install sits in its checkout: found from any working directory"
    clean_env.chdir(tmp_path)
    assert find_root() == ROOT
    assert load_config(seed_all=False).checkout


def test_root_user_cache(clean_env, tmp_path):
    clean_env.chdir(tmp_path)
    clean_env.setenv('XDG_CACHE_HOME', str(tmp_path/'xdg'))
    assert find_root(package=tmp_path/'site-packages'/'latentnb') == tmp_path/'xdg'/'latentnb' == user_cache_dir()
    clean_env.delenv('XDG_CACHE_HOME'); clean_env.setenv('HOME', str(tmp_path/'home'))
    assert find_root(package=tmp_path/'site-packages'/'latentnb') == tmp_path/'home'/'.cache'/'latentnb'
    assert find_root(package=tmp_path/'pkg') != tmp_path                     # never the bare working directory


# --- settings checked by name ----------------------------------------------------------------------------------------
@pytest.mark.parametrize('var, value', [('LATENTNB_SEED', 'abc'), ('LATENTNB_SEED', '-1'), ('LATENTNB_SEED', '1.5'),
                                        ('LATENTNB_THREADS', 'abc'), ('LATENTNB_THREADS', '-2')])
def test_env_integers(clean_env, var, value):
    clean_env.setenv(var, value)
    with pytest.raises(ValueError, match=f"^{var} must be an integer >= 0, got '{value}'$"):
        load_config(seed_all=False)


@pytest.mark.parametrize('seed', [True, 1.5, -1, 2**63, '3', None])
def test_check_seed_refuses(seed):
    with pytest.raises(ValueError, match=r"^seed must be an integer >= 0 \(at most 2\*\*63-1\), got "):
        check_seed(seed)
    if seed is not None:
        with pytest.raises(ValueError, match='^seed must be an integer'): load_config(seed=seed, seed_all=False)


def test_check_seed_accepts():
    assert check_seed(0) == 0 and check_seed(np.int32(5)) == 5 and type(check_seed(np.int64(5))) is int
    assert check_seed(2**63 - 1, 'LATENTNB_SEED') == 2**63 - 1


# --- load_dataset's n ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize('n', [-5, 0, 2.5, True, '10'])
def test_n_refused(tmp_path, n):
    with pytest.raises(ValueError, match=r"^n must be a positive integer \(the images to keep\) or None \(all of them\), got "):
        load_dataset('digits', n=n, data_dir=tmp_path)
    assert not (tmp_path/'digits').exists()                                  # refused before fetching anything


def test_n_kept(tmp_path):
    assert len(load_dataset('digits', n=7, data_dir=tmp_path)[1]) == 7
    assert len(load_dataset('digits', n=np.int64(7), data_dir=tmp_path)[1]) == 7
    assert len(load_dataset('digits', data_dir=tmp_path)[1]) == len(load_dataset('digits', n=10**6, data_dir=tmp_path)[1]) == 539


# --- a data folder the user may not write ----------------------------------------------------------------------------
def _deny(path): raise PermissionError(errno.EACCES, 'Permission denied', str(path))


def test_complete_data_needs_no_lock(tmp_path, monkeypatch):
    fetch_dataset('digits', tmp_path, verbose=False)
    (tmp_path/'digits'/'fetch.lock').unlink()
    monkeypatch.setattr(data, '_open_lock', _deny)                           # as if another user owned the folder
    assert fetch_dataset('digits', tmp_path) == 'cache'
    assert len(load_dataset('digits', data_dir=tmp_path)[1]) == 539
    assert not (tmp_path/'digits'/'fetch.lock').exists()


def test_incomplete_data_in_unwritable_folder(tmp_path, monkeypatch):
    fetch_dataset('digits', tmp_path, verbose=False)
    (tmp_path/'digits'/'test.npz').unlink()
    monkeypatch.setattr(data, '_open_lock', _deny)
    msg = (f"^{re.escape(str(tmp_path/'digits'))} is not writable \\(Permission denied: .*fetch.lock\\), "
           "and dataset 'digits' must be fetched into .*LATENTNB_ROOT to a folder you can write to$")
    with pytest.raises(PermissionError, match=msg):
        load_dataset('digits', data_dir=tmp_path)


def test_lock_file_of_another_user_is_used(tmp_path, monkeypatch):
    "A lock file we may not write is opened for reading: flock takes it all the same"
    real_open = open
    def no_append(p, mode='r', *a, **k):
        if mode == 'a': raise PermissionError(errno.EACCES, 'Permission denied', str(p))
        return real_open(p, mode, *a, **k)
    (tmp_path/'digits').mkdir(); (tmp_path/'digits'/'fetch.lock').write_text(''); (tmp_path/'MANIFEST.lock').write_text('')
    monkeypatch.setattr(data, 'open', no_append, raising=False)
    assert fetch_dataset('digits', tmp_path, verbose=False) == 'scikit-learn load_digits'


@pytest.mark.skipif(os.geteuid() == 0, reason='root writes through any mode bits')
def test_read_only_folder_chmod(tmp_path):
    fetch_dataset('digits', tmp_path/'ok', verbose=False)
    (tmp_path/'ok'/'digits'/'fetch.lock').unlink()
    ro = [tmp_path/'ok'/'digits', tmp_path/'ok', tmp_path/'empty']
    (tmp_path/'empty').mkdir()
    try:
        for p in ro: p.chmod(0o555)
        assert len(load_dataset('digits', data_dir=tmp_path/'ok')[1]) == 539
        with pytest.raises(PermissionError, match=f"^{re.escape(str(tmp_path/'empty'))} is not writable"):
            load_dataset('digits', data_dir=tmp_path/'empty')
    finally:
        for p in ro: p.chmod(0o755)


# --- an installed copy of the package (not the checkout) -------------------------------------------------------------
PROBE = '''
import time, latentnb
from latentnb.config import load_config
cfg = load_config(seed_all=False)
print('FILE', latentnb.__file__); print('ROOT', cfg.root); print('CHECKOUT', cfg.checkout)
from latentnb.generators.gan import load_gan
t0 = time.time()
try: G, D = load_gan('mnist'); print('LOADED', type(G).__name__, round(time.time() - t0, 2))
except FileNotFoundError as e: print('REFUSED', e)
'''


def _probe(tmp_path, **env):
    "Run PROBE with a copy of the package alone on PYTHONPATH, from a folder outside any checkout"
    pkg, cwd = tmp_path/'site', tmp_path/'cwd'
    if not pkg.exists(): shutil.copytree(ROOT/'latentnb', pkg/'latentnb', ignore=shutil.ignore_patterns('__pycache__'))
    cwd.mkdir(exist_ok=True)
    e = {k: v for k, v in os.environ.items() if not k.startswith('LATENTNB_') and k not in ('PYTHONPATH', 'XDG_CACHE_HOME')}
    e.update(PYTHONPATH=str(pkg), LATENTNB_PROFILE='quick', LATENTNB_THREADS='1', **env)
    r = subprocess.run([sys.executable, '-c', PROBE], cwd=cwd, env=e, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-3000:]
    out = dict(l.split(' ', 1) for l in r.stdout.splitlines() if l.split(' ', 1)[0].isupper())
    assert Path(out['FILE']).parent == pkg/'latentnb', 'the copy, not the checkout, was imported'
    return out, r


def test_installed_copy_with_root(tmp_path):
    out, r = _probe(tmp_path, LATENTNB_ROOT=str(ROOT))
    assert Path(out['ROOT']) == ROOT and out['CHECKOUT'] == 'True'
    assert out['LOADED'].startswith('Generator'), r.stdout
    assert float(out['LOADED'].split()[1]) < 10                              # loaded, not trained
    assert 'train' not in (r.stdout + r.stderr).lower(), r.stdout + r.stderr


def test_installed_copy_without_root(tmp_path):
    cache = tmp_path/'xdg'
    out, r = _probe(tmp_path, XDG_CACHE_HOME=str(cache), HOME=str(tmp_path/'home'))
    assert Path(out['ROOT']) == cache/'latentnb' and out['CHECKOUT'] == 'False'
    msg = out['REFUSED']
    assert f"looked for mnist-gan-G.quick.pt, mnist-gan-D.quick.pt in {cache/'latentnb'/'data'/'checkpoints'}" in msg, msg
    assert "set LATENTNB_ROOT to a latentnb checkout's folder" in msg and 'LATENTNB_TRAIN=1' in msg, msg
    assert not (cache/'latentnb'/'data'/'mnist').exists()                   # refused before fetching the training data
