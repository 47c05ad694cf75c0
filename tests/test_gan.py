"Plain behaviour of latentnb.generators.gan: the Generator/Discriminator contract, training loop, FID/KID wrapper (no dataset)"
import pytest, torch
from latentnb.generators.gan import Generator, Discriminator, sample_z, train_gan, generate, init_dcgan, FeatureExtractor, fid_kid
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
    import latentnb.generators.gan as g
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

# --- image shapes (issue: models of the dataset's shape) ---

@pytest.mark.parametrize('shape, layout', [((3, 32, 32), 'cifar10'), ((3, 28, 28), 'mnist'), ((1, 16, 16), 'cifar10'), ((1, 12, 12), 'mnist')])
def test_other_shapes_build_and_train(shape, layout):
    torch.manual_seed(0)
    G, D = init_dcgan(Generator(ngf=8, img_shape=shape)), init_dcgan(Discriminator(ndf=8, img_shape=shape))
    assert G.layout == D.layout == layout and G.img_shape == D.img_shape == shape
    h = train_gan(G, D, torch.rand(64, *shape), epochs=1, bs=32, progress=False)
    assert len(h['g_loss']) == 2 and all(v == v and abs(v) < 1e6 for vs in h.values() for v in vs)   # finite
    x = generate(G, 5, seed=1)
    assert x.shape == (5, *shape) and x.min() >= 0 and x.max() <= 1 and D(x).shape == (5,)
    assert generate(G, 0).shape == (0, *shape)

def test_dcgan_32_layout():
    "3×32×32: DCGAN's z -> 4×4 -> 8 -> 16 -> 32 transposed convolutions, and a mirrored discriminator ending in one logit"
    G, D = Generator(ngf=64, img_shape=(3, 32, 32)), Discriminator(ndf=64, img_shape=(3, 32, 32))
    convT = [m for m in G.modules() if isinstance(m, torch.nn.ConvTranspose2d)]
    assert [(m.in_channels, m.out_channels) for m in convT] == [(100, 256), (256, 128), (128, 64), (64, 3)]
    conv = [m for m in D.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [(m.in_channels, m.out_channels) for m in conv] == [(3, 64), (64, 128), (128, 256), (256, 1)]
    assert not any(isinstance(m, torch.nn.Sigmoid) for m in D.modules())

@pytest.mark.parametrize('bad', [(3, 32, 30), (1, 30, 30), (1, 4, 4), (28, 28), (0, 28, 28)])
def test_bad_shapes_are_refused(bad):
    with pytest.raises(ValueError, match=r'\(C, H, W\)'): Generator(img_shape=bad)
    with pytest.raises(ValueError, match=r'\(C, H, W\)'): Discriminator(img_shape=bad)
    with pytest.raises(ValueError, match='takes images'): Discriminator()(torch.rand(2, 3, 32, 32))

def test_feature_extractor_probes_the_given_shape():
    feat = FeatureExtractor(ReferenceCNN(in_ch=3).eval(), (3, 32, 32))
    a, b = torch.rand(60, 3, 32, 32), torch.rand(60, 3, 32, 32)
    assert feat(a[:2]).shape == (2, feat.num_features)
    assert fid_kid(feat, a, b, subset_size=30, kid_subsets=2)['fid'] >= 0

def test_default_shape_is_unchanged_for_the_committed_checkpoints():
    "The (1, 28, 28) layout loads the committed quick GANs strictly and gives the outputs they gave before image shapes existed"
    from latentnb.config import load_config
    from latentnb.checkpoints import load_checkpoint
    from latentnb.data import load_dataset
    cfg = load_config('ci', seed_all=False)
    before = {'mnist': (1810.2391357421875, -55.181236267089844, 13.912741661071777),          # G(z).sum(), D(G(z)).sum(), D(x).sum()
              'fashion-mnist': (3149.77099609375, -9.395164489746094, 40.3734245300293)}      # recorded with the code before img_shape
    z = sample_z(16, generator=torch.Generator().manual_seed(0))
    for ds, sums in before.items():
        G = load_checkpoint(f'{ds}-gan-G', Generator(ngf=32), profile='quick', cfg=cfg).eval()   # strict: same keys and shapes
        D = load_checkpoint(f'{ds}-gan-D', Discriminator(ndf=32), profile='quick', cfg=cfg).eval()
        x, _ = load_dataset(ds, 'test', n=16)
        with torch.no_grad(): got = (G(z).sum().item(), D(G(z)).sum().item(), D(x).sum().item())
        assert got == pytest.approx(sums, rel=1e-5, abs=1e-3), (ds, got)

def test_specs_name_the_shape_only_when_it_is_not_28x28(tmp_path, monkeypatch):
    "A colour dataset gets a colour GAN whose spec and manifest name its shape; MNIST's spec is as the committed checkpoints hold it"
    import json
    import latentnb.generators.gan as g
    from latentnb.config import load_config, RunConfig
    from latentnb.checkpoints import checkpoint_entry
    cfg = load_config('ci', seed_all=False)
    assert 'img_shape' not in g.gan_spec('mnist', cfg=cfg)
    q = load_config('quick', seed_all=False)
    assert checkpoint_entry('mnist-gan-G', cfg=q)['spec'] == json.loads(json.dumps(g.gan_spec('mnist', cfg=q)))   # quick reopens, never retrains
    monkeypatch.setattr(RunConfig, 'ckpt_dir', property(lambda self: tmp_path))
    G, D = g.load_gan('colour-mnist', cfg=cfg)
    assert G.img_shape == D.img_shape == (3, 32, 32) and generate(G, 3).shape == (3, 3, 32, 32) and D(generate(G, 3)).shape == (3,)
    e = checkpoint_entry('colour-mnist-gan-G', cfg=cfg)
    assert e['spec']['img_shape'] == e['meta']['img_shape'] == [3, 32, 32]
    G2, _ = g.load_gan('colour-mnist', cfg=cfg)   # reopened: the same weights
    assert all(torch.equal(a, b) for a, b in zip(G.state_dict().values(), G2.state_dict().values()))
    monkeypatch.setattr(g, 'dataset_info', lambda ds: type('Info', (), {'shape': (1, 30, 30)})())
    with pytest.raises(ValueError, match=r"load_gan\('weird'\).*\(1, 30, 30\)"): g.load_gan('weird', cfg=cfg)

def test_committed_quick_study_keeps_its_key(monkeypatch):
    "The image-shape change left the (1, 28, 28) study bit for bit as it was: its code hash maps to the committed study's (STUDY_CODE_SAME)"
    import json
    from pathlib import Path
    import latentnb.generators.gan as g
    from latentnb.config import load_config
    q = load_config('quick', seed_all=False)
    monkeypatch.setattr(g, 'reference_classifier', lambda ds, cfg=None: ReferenceCNN().eval())   # features hashed apart: no quick model is loaded
    committed = json.loads((Path(g.__file__).parents[2]/'data/checkpoints/mnist-gan-study.quick.json').read_text())['key']
    key = g.study_key('mnist', q, **committed['budgets'])
    assert {k: v for k, v in key.items() if k != 'features'} == {k: v for k, v in committed.items() if k != 'features'}, (
        "The GAN's study code changed: the committed quick study would be recomputed. Recompute it under quick, or, if every "
        "(1, 28, 28) result is bit for bit the same, map the new hash to the old one in STUDY_CODE_SAME")
