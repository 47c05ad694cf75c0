"Plain behaviour of latentnb.giftbench: fitness, the GA on a toy generator, Table III (classifier checks: test_blackbox)."
import pytest, torch, torch.nn.functional as F
from latentnb.generators import LatentGenerator, cgan_generator
from latentnb.giftbench import (margin, viable_seeds, giftbench_search, summarise, table3,
                                CondGenerator)

def toy_clf(x):
    m = torch.as_tensor(x).float().mean((1, 2, 3))*10
    return F.softmax(-(m[:, None] - torch.arange(10.))**2*5, 1)

class _Toy(LatentGenerator):
    def candidates(self, labels, g): return (labels.float()/10*6 - 3)[:, None].repeat(1, 2)

def ToyGen():
    return _Toy('toy', lambda z, y: ((z[:, :1] + 3)/6)[:, :, None, None].expand(-1, 1, 28, 28), (2,), 'normal', (-3.0, 3.0),
                steps={'low': 1e-4, 'high': 0.5})

def test_margin_sign():
    m = margin(torch.tensor([[.6, .3, .1], [.2, .5, .3]]), torch.tensor([0, 2]))
    assert torch.allclose(m, torch.tensor([.3, -.2]))

def test_search_finds_failures_in_bounds_and_is_deterministic():
    g = ToyGen(); vs = viable_seeds(g, toy_clf, 10)
    assert vs['pct_viable'] == 100
    r1 = giftbench_search(g, toy_clf, vs['z'], vs['y'], pop=6, generations=30, step='high', progress=False)
    r2 = giftbench_search(g, toy_clf, vs['z'], vs['y'], pop=6, generations=30, step='high', progress=False)
    assert r1.failed.all() and (r1.pred != r1.y).all() and r1.z_fail.abs().max() <= 3
    assert torch.equal(r1.iterations, r2.iterations)
    assert torch.equal(toy_clf(r1.x_fail).argmax(1), r1.pred)

def test_low_step_exhausts_budget():
    g = ToyGen(); vs = viable_seeds(g, toy_clf, 10)
    r = giftbench_search(g, toy_clf, vs['z'], vs['y'], pop=4, generations=3, step='low', progress=False)
    assert not r.failed.any() and (r.iterations == 3).all()
    row = summarise(r, 'toy', 'low'); assert row['n_misclassified'] == 0
    assert table3([row])['% misclassification (#)'][0] == '0.0 (0)'

def test_cgan_generator_shapes():
    gen = cgan_generator(CondGenerator(ngf=8), 'cgan')
    z = gen.candidates(torch.arange(3), torch.Generator().manual_seed(0))
    x = gen.decode(z, torch.arange(3))
    assert x.shape == (3, 1, 28, 28) and 0 <= x.min() and x.max() <= 1
    with pytest.raises(ValueError, match='class-conditional'): gen.decode(z)

def test_train_cgan_ends_on_cpu_with_ema_generator():
    from latentnb.giftbench import CGAN, train_cgan
    torch.manual_seed(0)
    gan = CGAN(width=8); x, y = torch.rand(32, 1, 28, 28), torch.randint(0, 10, (32,))
    m = train_cgan(gan, x, y, epochs=1, bs=16, device='cpu', progress=False)
    assert m['steps'] == 2 and m['device'] == 'cpu' and not gan.G.training
    assert all(p.device.type == 'cpu' for p in gan.parameters())
    out, logits = gan.D(x[:3], y[:3], with_aux=True)
    assert out.shape == (3,) and logits.shape == (3, 10)

def test_guided_unet_combines_conditional_and_unconditional_noise():
    from latentnb.giftbench import build_unet
    from latentnb.generators import ddim_generator
    torch.manual_seed(0)
    m = build_unet((8, 8, 8), guidance=1.0).eval()
    x, t, y = torch.randn(2, 1, 28, 28), torch.tensor(500), torch.tensor([3, 4])
    with torch.no_grad():
        ec = m.unet(x, t.expand(2), class_labels=y).sample
        eu = m.unet(x, t.expand(2), class_labels=torch.full_like(y, 10)).sample
        assert torch.allclose(m(x, t, class_labels=y).sample, ec, atol=1e-5)
        m.guidance = 3.0
        assert torch.allclose(m(x, t, class_labels=y).sample, eu + 3*(ec - eu), atol=1e-4)
    g = ddim_generator(m, 2, name='ddpm')
    assert g.conditional and g.n_classes == 10 and g.latent_shape == (1, 28, 28)

def test_export_zip_holds_every_viable_seed(tmp_path):
    import zipfile, pandas as pd
    from latentnb.giftbench import export_zip
    g = ToyGen(); vs = viable_seeds(g, toy_clf, 10)
    r = giftbench_search(g, toy_clf, vs['z'], vs['y'], pop=4, generations=2, step='high', progress=False)
    names = zipfile.ZipFile(export_zip(r, tmp_path/'x.zip', 'toy', 'toy')).namelist()
    assert len(names) == 2*len(r.y) + 1 and 'results.csv' in names
    df = pd.read_csv(zipfile.ZipFile(tmp_path/'x.zip').open('results.csv'))
    assert df.misclassified.sum() == int(r.failed.sum()) and len(df) == len(r.y)

def test_panel_defaults_are_the_papers_and_run_in_background():
    from latentnb.config import load_config
    from latentnb.giftbench import GiftbenchPanel
    cfg = load_config('ci', seed_all=False)
    p = GiftbenchPanel(cfg, generator_factory=lambda d, k: ToyGen(), classifier_factory=lambda d: toy_clf)
    assert (p.pop.value, p.iters.value) == (25, 250) and 'profile' in p.note.value
    p.n_seeds.value, p.pop.value, p.iters.value, p.step.value = 10, 4, 5, 'high'
    p.start(); row = p.wait(60)
    assert row['n_viable'] == 10 and '% misclassified' in p.status.value and len(p.images) == 10
