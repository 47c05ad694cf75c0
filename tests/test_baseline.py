"Plain behaviour of latentnb.search.mutation (DRfuzz's rules) and latentnb.diffgan.baseline (DRfuzz-style fuzzer, run_method's reopen rules) on tiny stand-in models"
import numpy as np, pytest, torch
from torch import nn
from latentnb.search.mutation import RULES, mutate, mutate_batch
from latentnb.diffgan.baseline import RuleChain, select_prob, drfuzz_search, FuzzResult
from latentnb.diffgan.rq import run_method, count_at
from latentnb.search.archive import Archive

def tiny(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 10)).eval()

class Disc(nn.Module):
    def forward(self, x): return x.flatten(1).mean(1) - 0.1   # 'real' when bright enough

@pytest.fixture
def seeds(): return torch.rand(40, 1, 8, 8, generator=torch.Generator().manual_seed(0))

@pytest.mark.parametrize('rule', RULES)
def test_mutate_keeps_shape_and_range(rule, seeds):
    m = mutate(seeds, rule, np.random.default_rng(0))
    assert m.shape == seeds.shape and m.min() >= 0 and m.max() <= 1 and not torch.equal(m, seeds)

def test_mutate_rejects_unknown_rule(seeds):
    with pytest.raises(ValueError, match='accepted'): mutate(seeds, 'warp', np.random.default_rng(0))

def test_chain_prefers_rewarded_rules():
    ch = RuleChain(('a', 'b', 'c'), p=0.5, rng=np.random.default_rng(1))
    ch.update(np.array([2]*50 + [0]*50 + [1]*50), np.ones(150), np.r_[np.ones(50), np.zeros(100)])
    assert list(ch.order()[:1]) == [2]
    visits = np.bincount([ch.next() for _ in range(5000)], minlength=3)/5000
    assert visits[2] > 0.4 and visits[2] > visits[0] and visits[2] > visits[1]
    with pytest.raises(ValueError): RuleChain(p=1.5)

def test_select_prob_decays_and_retires():
    w = select_prob(np.array([0, 20, 0]), np.array([0, 0, 11]))
    assert w[0] == 1 and abs(w[1] - 0.05) < 1e-9 and w[2] == 0

def test_fuzzer_budget_archive_and_fidelity(seeds, tmp_path):
    r = drfuzz_search(Disc(), tiny(1), tiny(2), seeds, budget_s=30, max_evals=400, out_dir=tmp_path, batch=20,
                      device='cpu', progress=False)
    assert isinstance(r, FuzzResult) and r.n_evals >= 400 and r.n_mutants == 10*r.rules.uses.sum()
    got = r.archive.load()
    x = torch.from_numpy(got['images']).float()/255
    assert len(x) == r.unique and (tiny(1)(x).argmax(1) != tiny(2)(x).argmax(1)).all()
    src = got['z'][:, 0].astype(int)
    assert (Disc()(x) >= Disc()(seeds[src]) - 1e-6).all()  # DRfuzz's rule: D(mutant) ≥ D(its seed)
    assert r.rules.new_disagreements.sum() == r.unique
    assert count_at(r.history, 1e9) == r.unique and count_at(r.history, -1) == 0

def test_mutate_batch_mixes_rules(seeds):
    m = mutate_batch(seeds[:6], np.array([0, 1, 2, 12, 13, 14]), np.random.default_rng(0))
    assert m.shape == seeds[:6].shape and 0 <= m.min() and m.max() <= 1

def test_global_fidelity(seeds, tmp_path):
    r = drfuzz_search(Disc(), tiny(1), tiny(2), seeds, budget_s=30, max_evals=300, out_dir=tmp_path, batch=20,
                      device='cpu', progress=False, fidelity='global', disc_threshold=0.35)
    x = torch.from_numpy(r.archive.load()['images']).float()/255
    assert r.disc_threshold == 0.35 and (Disc()(x) >= 0.35 - 1e-6).all()

def test_resume_reopens_a_finished_run(seeds, tmp_path):
    kw = dict(budget_s=30, max_evals=200, out_dir=tmp_path, batch=20, device='cpu', progress=False)
    a = drfuzz_search(None, tiny(1), tiny(2), seeds, **kw)
    b = drfuzz_search(None, tiny(1), tiny(2), seeds, **kw)
    assert (b.n_evals, b.unique, len(b.history)) == (a.n_evals, a.unique, 0)
    with pytest.raises(ValueError, match='resume=False'): drfuzz_search(None, tiny(1), tiny(2), seeds[:5], **kw)

def test_errors(seeds):
    with pytest.raises(ValueError, match='non-empty'): drfuzz_search(None, tiny(1), tiny(2), seeds[:0], budget_s=1, progress=False)
    with pytest.raises(ValueError, match='accepted'): drfuzz_search(None, tiny(1), tiny(2), seeds, rules=('warp',), budget_s=1, progress=False)
    with pytest.raises(ValueError, match='accepted'): run_method('X', None, None, tiny(1), tiny(2), seeds, 1, None)

def _stamp_other_code(d):
    "Make the finished run in `d` look as if other search code had made it"
    import pickle
    from latentnb.diffgan.rq import RESULT_FILE, KEY_FILE
    for f in (RESULT_FILE, KEY_FILE):
        p = d/f; obj = pickle.loads(p.read_bytes())
        (obj['key'] if f == RESULT_FILE else obj)['code'] = 'other-code'
        p.write_bytes(pickle.dumps(obj))

def test_stale_run_is_recomputed_by_default(seeds, tmp_path, capsys):
    kw = dict(budget_s=30, max_evals=len(seeds) + 60, seed=0, device='cpu', progress=False)
    r1 = run_method('DRfuzz', None, Disc(), tiny(1), tiny(2), seeds, out_dir=tmp_path, **kw)
    _stamp_other_code(tmp_path)
    r2 = run_method('DRfuzz', None, Disc(), tiny(1), tiny(2), seeds, out_dir=tmp_path, **kw)
    assert 'recomputed' in capsys.readouterr().out
    assert r2.rq_key['code'] != 'other-code' and r2.n_evals >= len(seeds) + 60   # searched again, under this code's key
    assert r2.session_seconds > 0 and len(r2.history) == len(r1.history)       # a fresh history, not appended to the stale one

def test_stale_run_is_reopened_only_when_asked(seeds, tmp_path, capsys):
    kw = dict(budget_s=30, max_evals=len(seeds) + 60, seed=0, device='cpu', progress=False)
    r1 = run_method('DRfuzz', None, Disc(), tiny(1), tiny(2), seeds, out_dir=tmp_path, **kw)
    _stamp_other_code(tmp_path)
    r2 = run_method('DRfuzz', None, Disc(), tiny(1), tiny(2), seeds, out_dir=tmp_path, reuse_stale=True, **kw)
    assert 'reuse_stale=True' in capsys.readouterr().out
    assert r2.rq_key['code'] == 'other-code' and r2.unique == r1.unique

# --- colour images ---
from latentnb.search.mutation import _blur

def test_colour_rules_treat_channels_alike():
    "A grey image in three equal channels stays grey under every rule but the three noise rules (drawn per channel)"
    g = torch.rand(6, 1, 16, 16, generator=torch.Generator().manual_seed(0)).repeat(1, 3, 1, 1)
    for r in RULES:
        m = mutate(g, r, np.random.default_rng(0))
        assert m.shape == g.shape and 0 <= m.min() and m.max() <= 1
        grey = torch.equal(m[:, 0], m[:, 1]) and torch.equal(m[:, 1], m[:, 2])
        assert grey == (r not in ('gauss_noise', 'multiplicative_noise', 'saltpepper_noise')), r

def test_bilateral_grey_is_unchanged():
    "One channel: the colour weight is the grey weight of before (bit for bit)"
    x = torch.rand(3, 1, 12, 12, generator=torch.Generator().manual_seed(1))
    from latentnb.search.mutation import _windows
    w = _windows(x, 7, 7)
    dy, dx = torch.meshgrid(torch.arange(-3, 4.), torch.arange(-3, 4.), indexing='ij'); r2 = (dy**2 + dx**2).flatten()
    ws = torch.where(r2 <= 9, torch.exp(-r2/(2*50**2)), torch.zeros(()))[:, None, None]
    wt = ws*torch.exp(-((w - x[:, :, None])*255)**2/(2*50**2))
    assert torch.equal(_blur(x, 'bilateral'), (wt*w).sum(2)/wt.sum(2))

def test_fuzzer_on_colour_seeds(tmp_path):
    def tiny3(s): torch.manual_seed(s); return nn.Sequential(nn.Flatten(), nn.Linear(3*8*8, 10)).eval()
    seeds = torch.rand(30, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    r = drfuzz_search(Disc(), tiny3(1), tiny3(2), seeds, budget_s=30, max_evals=300, out_dir=tmp_path, batch=20, device='cpu', progress=False)
    got = r.archive.load(); x = torch.from_numpy(got['images']).float()/255
    assert got['images'].shape[1:] == (3, 8, 8) and (tiny3(1)(x).argmax(1) != tiny3(2)(x).argmax(1)).all()
