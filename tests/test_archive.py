"The archive of triggering inputs: deduplication, commit/resume, and a search interrupted and resumed."
import numpy as np
import pytest
import torch
from torch import nn

from latentnb.search.archive import Archive, near_codes, to_uint8
from latentnb.search.fitness import ReclusterPolicy
from latentnb.diffgan import diffgan_search


def _batch(n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, 1, 28, 28, generator=g), torch.rand(n, 100, generator=g), torch.softmax(torch.rand(n, 10, generator=g), 1)


def test_dedup_exact_bytes(tmp_path):
    ar = Archive(tmp_path)
    x, z, p = _batch(10, 0)
    x = to_uint8(x).float()/255
    assert ar.add(x, z, p, p) == 10
    assert ar.add((x + 1e-3).clamp(0, 1), z, p, p) == 0      # same uint8 bytes after quantisation
    assert ar.add(x[:2].flip(-1), z[:2], p[:2], p[:2]) == 2
    assert len(ar) == 12


def test_uncommitted_generation_is_lost_committed_kept(tmp_path):
    ar = Archive(tmp_path, sample_size=5)
    for k in range(3):
        x, z, p = _batch(7, k); ar.add(x, z, p, p, gen=k); ar.commit(gen=k)
    x, z, p = _batch(7, 99); ar.add(x, z, p, p, gen=3)      # never committed: a crash here
    (tmp_path/'chunks'/'000003.npz').write_bytes(b'partial')  # and a half-written chunk
    again = Archive(tmp_path, sample_size=5)
    assert len(again) == 21 and again.state == {'gen': 2}
    assert not (tmp_path/'chunks'/'000003.npz').exists()
    assert again.sample().shape == (5, 1, 28, 28)
    assert again.load()['images'].shape == (21, 1, 28, 28)


def test_uniform_sample_independent_of_order(tmp_path):
    xs = [_batch(20, k) for k in range(4)]
    a, b = Archive(tmp_path/'a', sample_size=8), Archive(tmp_path/'b', sample_size=8)
    for x, z, p in xs: a.add(x, z, p, p)
    for x, z, p in reversed(xs): b.add(x, z, p, p)
    sa = {bytes(i) for i in a.sample().numpy()}; sb = {bytes(i) for i in b.sample().numpy()}
    assert sa == sb


def test_near_duplicate_rule():
    x = torch.zeros(3, 1, 28, 28); x[1, 0, 5, 5] = 0.5; x[2, 0, :8, :8] = 1.0
    c = near_codes(to_uint8(x))
    assert (c[0] == c[1]).all() and not (c[0] == c[2]).all()


def _toys():
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(100, 784), nn.Sigmoid(), nn.Unflatten(1, (1, 28, 28))).eval()
    G.nz, G.z_bounds = 100, (-1.0, 1.0)  # the DCGAN contract `as_generator` recognises
    a = nn.Sequential(nn.Flatten(), nn.Linear(784, 10)).eval()
    b = nn.Sequential(nn.Flatten(), nn.Linear(784, 10)).eval()
    return G, a, b


class _Crash(Exception): pass


@pytest.mark.parametrize('crash_at', [1, 3])
def test_search_resume_after_interrupt(tmp_path, crash_at):
    G, a, b = _toys()
    pol = ReclusterPolicy(reducer='pca', max_share=None, max_points=300)
    kw = dict(budget_s=120, max_evals=600, policy=pol, device='cpu', progress=False, seed=3)
    full = diffgan_search(G, a, b, out_dir=tmp_path/'full', **kw)

    def crash(row):
        if row['gen'] == crash_at: raise _Crash
    with pytest.raises(_Crash):
        diffgan_search(G, a, b, out_dir=tmp_path/'cut', callback=crash, **kw)
    assert Archive(tmp_path/'cut').state['n_gen'] == crash_at
    res = diffgan_search(G, a, b, out_dir=tmp_path/'cut', **kw)
    assert (res.n_evals, res.n_gen, res.unique, res.n_trig_evals) == (full.n_evals, full.n_gen, full.unique, full.n_trig_evals)
    np.testing.assert_array_equal(res.archive.load()['images'], full.archive.load()['images'])


def test_keyboard_interrupt_returns_committed_state(tmp_path):
    G, a, b = _toys()
    def ctrl_c(row):
        if row['gen'] == 2: raise KeyboardInterrupt
    res = diffgan_search(G, a, b, budget_s=60, max_evals=500, policy=ReclusterPolicy(reducer='pca'), device='cpu',
                         progress=False, out_dir=tmp_path, callback=ctrl_c)
    assert res.interrupted and res.n_gen == 2 and res.n_evals == 200
    more = diffgan_search(G, a, b, budget_s=60, max_evals=500, policy=ReclusterPolicy(reducer='pca'), device='cpu',
                          progress=False, out_dir=tmp_path)
    assert more.n_evals == 500 and not more.interrupted
