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
