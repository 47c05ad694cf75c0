"Plain behaviour of latentnb.gan: the Generator/Discriminator contract, training loop, FID/KID wrapper (no dataset)"
import pytest, torch
from latentnb.gan import Generator, Discriminator, sample_z, train_gan, generate, init_dcgan, FeatureExtractor, fid_kid
from latentnb.zoo import ReferenceCNN

def test_contract():
    G, D = Generator().eval(), Discriminator().eval()
    assert G.nz == 100 and G.z_bounds == (-1.0, 1.0)
    z = sample_z(5)
    assert z.shape == (5, 100) and z.min() >= -1 and z.max() <= 1
    x = G(z)
    assert x.shape == (5, 1, 28, 28) and x.min() >= 0 and x.max() <= 1
    assert D(x).shape == (5,)

def test_train_logs_every_step_and_is_deterministic():
    x = torch.rand(96, 1, 28, 28)
    outs = []
    for _ in range(2):
        torch.manual_seed(0); G, D = init_dcgan(Generator(ngf=8)), init_dcgan(Discriminator(ndf=8))
        h = train_gan(G, D, x, epochs=2, bs=32, progress=False, seed=1)
        assert set(h) == {'d_loss', 'g_loss', 'd_real', 'd_fake'} and len(h['g_loss']) == 6
        outs.append(generate(G, 4, seed=2))
    assert torch.equal(outs[0], outs[1])
    with pytest.raises(ValueError, match='fewer than one batch'): train_gan(G, D, x[:5], bs=32, progress=False)

def test_fid_kid_custom_features():
    feat = FeatureExtractor(ReferenceCNN().eval())
    a, b = torch.rand(120, 1, 28, 28), torch.rand(120, 1, 28, 28)
    s = fid_kid(feat, a, b, subset_size=50, kid_subsets=3)
    assert set(s) == {'fid', 'kid', 'kid_std'} and s['fid'] >= 0

def test_study_cache_is_keyed_by_everything_the_study_depends_on(tmp_path, monkeypatch):
    "A cached Optuna study is reopened only when made with the same code, budgets, data and seed (or when the caller asks)"
    import json
    import pandas as pd
    import latentnb.gan as g
    from latentnb.config import load_config
    cfg, ref = load_config('ci', seed_all=False), ReferenceCNN().eval()
    monkeypatch.setattr(g, 'reference_classifier', lambda ds, cfg=None: ref)
    monkeypatch.setattr(g, 'ckpt_paths', lambda name, profile, cfg=None: (tmp_path/f'{name}.pt', tmp_path/f'{name}.json'))
    calls = []
    class _Study:
        best_params, best_value = {'lr_g': 1e-3}, 1.0
        def trials_dataframe(self, attrs): return pd.DataFrame([dict(number=0, params_lr_g=1e-3, value=1.0, state='COMPLETE')])
    monkeypatch.setattr(g, 'tune_gan', lambda ds, cfg=None, **kw: calls.append(kw) or _Study())
    kw = dict(n_trials=2, n_real=64, max_epochs=1, n_fid=100)
    assert not g.cached_study('mnist', cfg, **kw)['reopened'] and len(calls) == 1
    assert g.cached_study('mnist', cfg, **kw)['reopened'] and len(calls) == 1                          # same key: reopened
    assert not g.cached_study('mnist', cfg, **(kw | dict(n_trials=3)))['reopened'] and len(calls) == 2  # another budget
    p = tmp_path/'mnist-gan-study.json'
    d = json.loads(p.read_text()); d['key']['code'] = 'made by other code'; p.write_text(json.dumps(d))
    assert g.cached_study('mnist', cfg, reuse_stale=True, **(kw | dict(n_trials=3)))['reopened'] and len(calls) == 2
    assert not g.cached_study('mnist', cfg, **(kw | dict(n_trials=3)))['reopened'] and len(calls) == 3  # other code: recomputed
    p.write_text(json.dumps(dict(arch=g.GAN_ARCH, best_params={}, best_fid=0.0, trials=[])))            # keyed by the layout only
    assert not g.cached_study('mnist', cfg, **kw)['reopened'] and len(calls) == 4
    assert g.study_key('mnist', cfg, **kw) != g.study_key('mnist', load_config('ci', seed=1, seed_all=False), **kw)   # the seed
    assert g.study_key('mnist', cfg, progress=True, **kw) == g.study_key('mnist', cfg, **kw)                       # not the progress bar
