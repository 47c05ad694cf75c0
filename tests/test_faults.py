"""Issue 61's fault injection: two writers, kill -9 inside a commit, truncated / deleted / bit-flipped / foreign chunks, a
missing manifest or state, a folder that turns read-only mid-run, an out_dir of user files, arguments that used to be
checked only after the damage. Each case ends with nothing lost and one clear message; each failed on 723570d."""
import json, math, os, signal, subprocess, sys, textwrap, time, warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import latentnb.search.archive as archive_mod
from latentnb.demo import demo_models
from latentnb.diffgan import diffgan_search, random_search
from latentnb.search import objective, run_search
from latentnb.search.archive import (MANIFEST, Archive, ArchiveError, ArchiveLocked, ArchiveMismatch, ArchiveMoved)
from latentnb.search.fitness import ReclusterPolicy

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope='module')
def demo():
    gens, (A, B), x, y = demo_models()
    return gens['PCA (stand-in)'], A, B


def _run(demo, d, **kw):
    G, A, B = demo
    kw = dict(dict(budget_s=60, max_evals=300, seed=0, progress=False, commit_s=0), **kw)
    return run_search('random', G, objective('differential', A, B), out_dir=d, **kw)


def _files(d: Path) -> dict:
    "Every file under `d` with its bytes' size: what a case must leave as it was"
    return {str(f.relative_to(d)): f.stat().st_size for f in sorted(d.rglob('*')) if f.is_file() and f.name != '.lock'}


def _toys():
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(100, 784), nn.Sigmoid(), nn.Unflatten(1, (1, 28, 28))).eval()
    G.nz, G.z_bounds = 100, (-1.0, 1.0)
    a, b, c = (nn.Sequential(nn.Flatten(), nn.Linear(784, 10)).eval() for _ in range(3))
    return G, a, b, c


POL = dict(policy=ReclusterPolicy(reducer='pca', max_share=None, max_points=300), device='cpu', progress=False)


# --- 1. two processes on one out_dir -------------------------------------------------------------------------------
def test_second_writer_is_refused_naming_the_holder(tmp_path, demo):
    d = tmp_path/'run'
    script = tmp_path/'hold.py'
    script.write_text(textwrap.dedent(f"""
        import time
        from latentnb.config import load_config
        from latentnb.demo import demo_models
        from latentnb.search import objective, run_search
        load_config(); gens, (A, B), x, y = demo_models()
        def slow(row): time.sleep(0.05)
        run_search('random', gens['PCA (stand-in)'], objective('differential', A, B), budget_s=30, out_dir={str(d)!r},
                   progress=False, callback=slow, commit_s=0)
    """))
    p = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):
            if (d/MANIFEST).exists(): break
            time.sleep(0.1)
        assert (d/MANIFEST).exists(), p.stdout.read1(10000) if p.poll() is not None else 'no commit in 60 s'
        with pytest.raises(ArchiveLocked, match=f'is being written by pid {p.pid}'):
            _run(demo, d, seed=1)
        with pytest.raises(ArchiveLocked): _run(demo, d, resume=False)   # not moved aside under a live writer either
    finally:
        p.send_signal(signal.SIGKILL); p.wait()
    assert len(Archive(d, write=False)) == json.loads((d/MANIFEST).read_text())['n']   # the holder's commits, all there


# --- 2. a missing manifest (was: a missing state.pkl) wiped the archive --------------------------------------------
def test_missing_manifest_is_an_error_never_a_wipe(tmp_path, demo):
    d = tmp_path/'run'
    res = _run(demo, d)
    n = len(res.archive); assert n > 0
    (d/MANIFEST).unlink()
    before = _files(d)
    with pytest.raises(ArchiveError, match=r'but no manifest\.json: Archive\.repair'): Archive(d)
    with pytest.raises(ArchiveError, match='no manifest'): _run(demo, d)
    assert _files(d) == before
    assert Archive.repair(d)['inputs'] == n and len(Archive(d, write=False)) == n
    assert len(_run(demo, d, max_evals=400).archive) >= n            # its key read back from its last state: the run resumes


# --- 3. out_dir deleted without checking that it is an archive -----------------------------------------------------
@pytest.mark.parametrize('resume', [True, False])
def test_user_folder_is_refused(tmp_path, demo, resume):
    d = tmp_path/'mine'; d.mkdir(); (d/'thesis.tex').write_text('years of work'); (d/'data').mkdir()
    with pytest.raises(ArchiveError, match=r'not a latentnb archive \(data, thesis.tex\)'): _run(demo, d, resume=resume)
    G, a, b, _ = _toys()
    with pytest.raises(ArchiveError, match='not a latentnb archive'):
        diffgan_search(G, a, b, budget_s=5, out_dir=d, resume=resume, **POL)
    with pytest.raises(ArchiveError, match='not a latentnb archive'): random_search(G, a, b, budget_s=5, out_dir=d, progress=False)
    assert _files(d) == {'thesis.tex': 13}


def test_argus_generate_refuses_a_user_folder(tmp_path):
    from latentnb.argus import generate
    from latentnb.generators.vqvae import VQVAE
    d = tmp_path/'mine'; d.mkdir(); (d/'notes.txt').write_text('mine')
    x, y = torch.rand(4, 1, 28, 28), torch.tensor([0, 1, 2, 3])
    with pytest.raises(ArchiveError, match='not a latentnb archive'): generate(VQVAE(), x, y, x, y, out_dir=d)
    assert _files(d) == {'notes.txt': 4}


def test_resume_false_moves_another_search_aside(tmp_path, demo):
    G, a, b, _ = _toys()
    d = tmp_path/'run'
    first = diffgan_search(G, a, b, budget_s=60, max_evals=200, out_dir=d, **POL)
    with pytest.warns(ArchiveMoved, match='moved to .*run.old-1'):
        random_search(G, a, b, budget_s=60, max_evals=200, out_dir=d, progress=False)
    assert len(Archive(tmp_path/'run.old-1', write=False)) == len(first.archive) > 0


# --- 4. checks after the damage ------------------------------------------------------------------------------------
@pytest.mark.parametrize('seed', ['x', 1.5, -1, 2**70, True])
def test_bad_seed_named_before_the_folder_is_touched(tmp_path, demo, seed):
    d = tmp_path/'run'
    _run(demo, d); before = _files(d)
    with pytest.raises(ValueError, match=r'^seed must be an integer >= 0'): _run(demo, d, resume=False, seed=seed)
    G, a, b, _ = _toys()
    with pytest.raises(ValueError, match=r'^seed must be an integer >= 0'):
        diffgan_search(G, a, b, budget_s=5, out_dir=d, resume=False, seed=seed, **POL)
    assert _files(d) == before and not (tmp_path/'run.old-1').exists()


@pytest.mark.parametrize('commit_s', [float('nan'), -1, '5'])
def test_bad_commit_s_named(tmp_path, demo, commit_s):
    with pytest.raises(ValueError, match='^commit_s must be a number of seconds'): _run(demo, tmp_path/'run', commit_s=commit_s)
    assert not (tmp_path/'run').exists()


def test_huge_population_refused_before_the_warm_up(tmp_path):
    G, a, b, _ = _toys()
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r'^pop_size=1000000000: one generation needs about'):
        diffgan_search(G, a, b, budget_s=5, pop_size=10**9, out_dir=tmp_path/'run', **POL)
    assert time.perf_counter() - t0 < 5 and not (tmp_path/'run').exists()


# --- 5. an archive of another search mixed in ----------------------------------------------------------------------
def test_resume_with_other_models_or_settings_is_refused(tmp_path):
    G, a, b, c = _toys()
    d = tmp_path/'run'
    diffgan_search(G, a, b, budget_s=60, max_evals=200, out_dir=d, **POL)
    before = _files(d)
    with pytest.raises(ArchiveMismatch, match='model_b: weights'): diffgan_search(G, a, c, budget_s=60, out_dir=d, **POL)
    with pytest.raises(ArchiveMismatch, match='seed: 0 → 1'): diffgan_search(G, a, b, budget_s=60, out_dir=d, seed=1, **POL)
    with pytest.raises(ArchiveMismatch, match="'pop_size': 100"): diffgan_search(G, a, b, budget_s=60, pop_size=20, out_dir=d, **POL)
    with pytest.raises(ArchiveMismatch, match="novelty"): diffgan_search(G, a, b, budget_s=60, fitness=('novelty',), out_dir=d, **POL)
    G2 = nn.Sequential(nn.Linear(100, 784), nn.Sigmoid(), nn.Unflatten(1, (1, 28, 28))).eval(); G2.nz, G2.z_bounds = 100, (-1.0, 1.0)
    with pytest.raises(ArchiveMismatch, match='generator: weights'): diffgan_search(G2, a, b, budget_s=60, out_dir=d, **POL)
    assert _files(d) == before
    more = diffgan_search(G, a, b, budget_s=60, max_evals=400, out_dir=d, **POL)   # the same run resumes, with more budget
    assert more.n_evals == 400


# --- 6. corrupt archives -------------------------------------------------------------------------------------------
def _chunk(d, i=1): return d/'chunks'/f'{i:06d}.npz'

@pytest.mark.parametrize('fault', ['truncated', 'deleted', 'bit-flipped', 'foreign', 'state'])
def test_corrupt_archive_named_then_repaired(tmp_path, demo, fault):
    d, other = tmp_path/'run', tmp_path/'other'
    n = len(_run(demo, d).archive)
    assert Archive(d, write=False).n_chunks >= 3
    f = _chunk(d)
    if fault == 'truncated': f.write_bytes(f.read_bytes()[:100])
    elif fault == 'deleted': f.unlink()
    elif fault == 'bit-flipped': b = bytearray(f.read_bytes()); b[len(b)//2] ^= 4; f.write_bytes(bytes(b))
    elif fault == 'foreign': _run(demo, other, seed=7); f.write_bytes(_chunk(other).read_bytes())
    else: s = d/json.loads((d/MANIFEST).read_text())['state']['file']; s.write_bytes(b'\x80\x04garbage')
    what = 'state-' if fault == 'state' else '000001.npz'
    with pytest.raises(ArchiveError, match=f'{what}.*Archive.repair'): Archive(d)
    with pytest.raises(ArchiveError, match=what): _run(demo, d)                  # refused by the search too, before any work
    r = Archive.repair(d)
    kept = len(Archive(d, write=False))
    if fault == 'state': assert kept == n and r['state_kept'] is False
    else: assert 0 < kept < n and (r['aside'] or r['missing'])
    if fault != 'deleted' and fault != 'state': assert any((d/'aside').glob('000001.npz.*'))   # set aside, not deleted
    res = _run(demo, d, max_evals=400)                                          # and the search goes on from what was kept
    assert len(res.archive) >= kept


# --- 7. unchecked outputs ------------------------------------------------------------------------------------------
@pytest.mark.parametrize('scale, match', [(lambda x: x*255, r'x/255 for pixel values'), (lambda x: x*2 - 1, r'\(x \+ 1\)/2 for tanh'),
                                          (lambda x: x*float('nan'), 'with NaN or infinite pixels')])
def test_generator_output_checked_on_the_first_batch(tmp_path, scale, match):
    G, a, b, _ = _toys()
    Gs = nn.Sequential(G, type('S', (nn.Module,), {'forward': lambda self, x: scale(x)})()).eval(); Gs.nz, Gs.z_bounds = G.nz, G.z_bounds
    with pytest.raises(ValueError, match=match): diffgan_search(Gs, a, b, budget_s=30, out_dir=tmp_path/'run', **POL)
    assert Archive(tmp_path/'run', write=False).n == 0


def test_models_of_other_classes_than_a_conditional_generator(tmp_path):
    from latentnb.generators import LatentGenerator
    g = LatentGenerator('cond', lambda z, y: torch.sigmoid(z[:, :1, None, None].expand(-1, 1, 8, 8)), latent_shape=(4,), prior='normal',
                        conditional=True, n_classes=10)
    three = nn.Sequential(nn.Flatten(), nn.Linear(64, 3)).eval()
    with pytest.raises(ValueError, match='answers 3 classes, but cond generates 10'):
        run_search('random', g, objective('misclassification', three), budget_s=30, out_dir=tmp_path/'run', progress=False)


# --- kill -9 inside a commit, and a folder that turns read-only mid-run --------------------------------------------
KILL = """
import json, os, signal, sys
import latentnb.search.archive as A
from latentnb.config import load_config
from latentnb.demo import demo_models
from latentnb.search import objective, run_search
real, seen = A._write_atomic, []
def dying(path, data):
    if path.name == 'manifest.json':
        seen.append(path)
        if len(seen) == 3: os.kill(os.getpid(), signal.SIGKILL)   # the chunk and the state are written, the manifest not
    real(path, data)
if sys.argv[2] == 'die': A._write_atomic = dying
load_config()   # seeds torch, as a notebook does: the demo's PCA draws from it
gens, (a, b), x, y = demo_models()
for d in sys.argv[1:2] if sys.argv[2] == 'die' else sys.argv[1:3]:   # resume the cut run, then run it whole, in one process
    r = run_search('random', gens['PCA (stand-in)'], objective('differential', a, b), budget_s=60, max_evals=300, seed=0,
                   progress=False, commit_s=0, out_dir=d)
    print(json.dumps([r.n_evals, r.n_gen, len(r.archive), r.n_trig_evals]))
"""

def test_kill_inside_a_commit_then_resume_exactly(tmp_path):
    run = lambda *args: subprocess.run([sys.executable, '-c', KILL, *map(str, args)], cwd=ROOT, capture_output=True, text=True)
    d = tmp_path/'cut'
    r = run(d, 'die')                                                 # a user's session, killed inside its third commit
    assert r.returncode == -signal.SIGKILL, r.stderr[-2000:]
    assert Archive(d, write=False).n_chunks == 2                     # the two commits before the kill, intact
    again = run(d, tmp_path/'full')                                   # the next session resumes it; then a whole run to compare
    resumed, full = again.stdout.splitlines()[-2:]
    assert resumed == full, again.stderr[-2000:]
    assert any((d/'aside').iterdir())                                 # the uncommitted chunk: set aside, not deleted


def test_folder_turning_read_only_mid_run(tmp_path, demo, monkeypatch):
    d = tmp_path/'run'
    real, n = archive_mod._write_atomic, []
    def refuse(path, data):
        if path.name == MANIFEST:
            n.append(1)
            if len(n) >= 3: raise PermissionError(13, 'Permission denied', str(path))
        real(path, data)
    monkeypatch.setattr(archive_mod, '_write_atomic', refuse)
    with pytest.raises(ArchiveError, match=r'could not write \(Permission denied.*the last commit .* is intact'): _run(demo, d)
    monkeypatch.setattr(archive_mod, '_write_atomic', real)
    kept = Archive(d, write=False); assert kept.n_chunks == 2
    full = _run(demo, tmp_path/'full')
    res = _run(demo, d)                                               # writable again: the run resumes from its last commit
    assert (res.n_evals, len(res.archive)) == (full.n_evals, len(full.archive))


def test_models_of_other_classes_than_an_unconditional_gan(tmp_path):
    G, _, _, _ = _toys()
    G.data_classes = 10   # as `load_gan` records it: the MNIST GAN's digits
    a3, b3 = (nn.Sequential(nn.Flatten(), nn.Linear(784, 3)).eval() for _ in range(2))
    with pytest.raises(ValueError, match='answers 3 classes, but GAN .* generates 10'):
        diffgan_search(G, a3, b3, budget_s=30, out_dir=tmp_path/'run', **POL)
    assert len(Archive(tmp_path/'run', write=False)) == 0


def test_forked_child_does_not_inherit_the_lock(tmp_path):
    import multiprocessing as mp
    d = tmp_path/'run'
    held = Archive(d)                                               # this process writes d...
    def child(q):
        try: Archive(d); q.put('opened')
        except ArchiveLocked as e: q.put(str(e))
    q = mp.get_context('fork').Queue(); p = mp.get_context('fork').Process(target=child, args=(q,)); p.start(); p.join(30)
    assert f'being written by pid {os.getpid()}' in q.get(timeout=5)   # ...and a forked worker may not, though it inherited the fd
    held.close()
