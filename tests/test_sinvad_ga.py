"SINVAD's GA and hill climbing: the paper's / authors' operators (variant 'sinvad', the default) and the earlier ones ('latentnb')"
import pytest
import torch
from torch import nn

from latentnb.search import search_space
from latentnb.sinvad import (SINVAD_VARIANTS, SinvadGA, HillClimb, sinvad_offspring, sinvad_parents, sinvad_sigma, sinvad_distance,
                             ga_search, hill_climb, sinvad_fitness, ranking_key)
from latentnb.blackbox import predict, predict_proba


# --- frozen copies of the operators as they were before the 'sinvad' variant (the 'latentnb' variant must match them bit for bit)
def old_offspring(P, v0, sig, n, g, p_reset=0.05, mask=None):
    S, pop, d = P.shape; ar = torch.arange(S)[:, None]
    par = torch.randint(0, pop, (S, 2*n, 2), generator=g).min(-1).values
    p1, p2 = P[ar, par[:, :n]], P[ar, par[:, n:]]
    cut = torch.randint(1, d, (S, n, 1), generator=g)
    child = torch.where(torch.arange(d).view(1, 1, d) < cut, p1, p2)
    differs = (child - v0[:, None]).abs() > 1e-6
    noise = sig*torch.randn(S, n, d, generator=g)
    child = child + differs*(noise if mask is None else noise*mask)
    reset = torch.rand(S, n, d, generator=g) < p_reset
    return torch.where(reset, v0[:, None].expand_as(child), child)

@pytest.fixture(scope='module')
def toy():
    "Pixel space of 2×2 images, a tiny linear classifier and 6 seed images"
    torch.manual_seed(0)
    clf = nn.Sequential(nn.Flatten(), nn.Linear(4, 3)).eval()
    x = torch.rand(6, 1, 2, 2)
    return search_space('pixels', shape=(1, 2, 2)), clf, x


def test_parents_from_the_top_10():
    g = torch.Generator().manual_seed(0)
    P = torch.arange(50, dtype=torch.float32).view(1, 50, 1).expand(1, 50, 8).clone()   # row r holds r everywhere; rows ranked 0..49
    kids = sinvad_offspring(P, torch.full((1, 8), -1.), torch.zeros(1, 1, 1), 400, g, p_reset=0.0)   # σ = 0, no reset
    assert set(kids.unique().tolist()) == set(range(10))          # every gene from the top 10, and each of them used
    assert [sinvad_parents(p) for p in (50, 20, 12, 3)] == [10, 10, 6, 2]
    assert SinvadGA().elite == 10 and SinvadGA(pop=12).elite == 6


def test_sigma_schedule():
    s = sinvad_sigma(torch.tensor([.1, .1, .049]), torch.tensor([1., 2., float('inf')]), torch.tensor([1., 3., float('inf')]))
    torch.testing.assert_close(s, torch.tensor([.07, .1, .0343]))   # equal best → ×0.7; improved → reset to 0.1


def test_binomial_reset_to_the_seed():
    g = torch.Generator().manual_seed(1)
    P, v0 = torch.randn(2, 20, 100) + 5, torch.zeros(2, 100)
    kids = sinvad_offspring(P, v0, torch.full((2, 1, 1), 0.1), 30, g)                 # default p_reset = 0.5 (the authors')
    share = float((kids == 0).float().mean())
    assert 0.45 < share < 0.55
    kids = sinvad_offspring(P, v0, torch.full((2, 1, 1), 0.1), 30, g, p_reset=1.0)
    assert (kids == 0).all()                                                          # reset genes take the seed's value
    same = P[:, :1].expand(-1, 20, -1).clone()                                        # parents equal to the seed: nothing differs,
    assert torch.equal(sinvad_offspring(same, P[:, 0], torch.ones(2, 1, 1), 5, g, p_reset=0.0), P[:, :1].expand(-1, 5, -1))  # nothing mutates


def test_l1_distance():
    v, p = torch.tensor([[3., -4.]]), torch.tensor([[.2, .8]])
    assert sinvad_fitness(v, torch.zeros(2), p, torch.tensor(0))[0].item() == 7.0
    assert sinvad_fitness(v, torch.zeros(2), p, torch.tensor(0), ord=2)[0].item() == 5.0
    assert sinvad_distance(v, torch.zeros(2)).item() == 7.0


def test_stop_rule(toy):
    space, _, x = toy
    const = nn.Sequential(nn.Flatten(), nn.Linear(4, 3)).eval()                       # always class 0: nothing ever crosses
    with torch.no_grad(): const[1].weight.zero_(); const[1].bias.copy_(torch.tensor([5., 0., 0.]))
    r = ga_search(space, const, x, pop=12, generations=500)
    assert not r.found.any()
    assert len(r.history) == 13                                                       # 0.1·0.7^13 < 1e-3: 13 generations, then stop


def test_paper_ga_finds_on_toy(toy):
    space, clf, x = toy
    r = ga_search(space, clf, x, pop=20, generations=40, sigma_init=0.5)
    assert r.found.any() and (r.label[r.found] != r.seed_label[r.found]).all()
    assert torch.isfinite(r.distance[r.found]).all()


def test_latentnb_variant_unchanged(toy):
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    P, v0, sig = torch.randn(3, 10, 7), torch.randn(3, 7), torch.rand(3, 1, 1)
    mask = torch.tensor([1., 1, 1, 1, 1, 1, 0])
    assert torch.equal(sinvad_offspring(P, v0, sig, 6, g1, 0.05, mask, 'latentnb'), old_offspring(P, v0, sig, 6, g2, 0.05, mask))
    space, clf, x = toy
    r = ga_search(space, clf, x, pop=10, generations=6, seed=4, variant='latentnb')
    o = old_ga_latentnb(space, clf, x, pop=10, generations=6, seed=4)   # the loop before the move (its operators: checked above)
    assert torch.equal(r.v, o.v) and torch.equal(r.distance, o.distance)
    s = SinvadGA(variant='latentnb')
    assert (s.pop, s.generations, s.elite, s.sigma, s.p_reset) == (20, 30, 4, 0.5, 0.05)


def test_hill_climb_paper_moves_one_element(toy):
    space, clf, x = toy
    obj = lambda im, i: predict_proba(clf, im)[torch.arange(len(im)), 0]
    v, _, h = hill_climb(space, obj, x, iters=40)
    assert (h[1:] <= h[:-1]).all() and h.shape == (41, len(x))                      # first improvement: never worse
    assert HillClimb().iters == 3 and HillClimb().step == 1.0


@pytest.mark.parametrize('make', [lambda: SinvadGA(variant='gift'), lambda: HillClimb(variant='paper'),
                                  lambda: sinvad_offspring(torch.zeros(1, 4, 3), torch.zeros(1, 3), torch.ones(1, 1, 1), 2,
                                                           torch.Generator(), variant='x')])
def test_bad_variant(make):
    with pytest.raises(ValueError, match="variant must be one of sinvad, latentnb"): make()


def test_bad_variant_functions(toy):
    space, clf, x = toy
    with pytest.raises(ValueError, match='variant must be'): ga_search(space, clf, x, variant='gift')
    with pytest.raises(ValueError, match='variant must be'): hill_climb(space, lambda im, i: im.sum((1, 2, 3)), x, variant='gift')
    assert SINVAD_VARIANTS == ('sinvad', 'latentnb')


# --- image shapes: the VAEs build for (C, H, W); MNIST's (1, 28, 28) builds exactly the modules the committed checkpoints hold
from latentnb.generators.vae import MLPVAE, ConvVAE, DeepConvVAE, KINDS
from latentnb.data import check_img_shape
from latentnb.sinvad import latent_space, pixel_space

MNIST_SHAPES = {   # state_dict shapes of the small default-shape VAEs, as before `img_shape`
    'MLPVAE': {'enc.weight': (32, 784), 'dec.2.weight': (784, 32), 'mu.weight': (8, 32)},
    'ConvVAE': {'conv.0.weight': (8, 1, 4, 4), 'conv.2.weight': (16, 8, 4, 4), 'mu.weight': (4, 784), 'fc.weight': (784, 4),
                'deconv.2.weight': (16, 8, 4, 4), 'deconv.4.weight': (8, 1, 4, 4), 'deconv.4.bias': (1,)},
    'DeepConvVAE': {'conv.0.weight': (8, 1, 4, 4), 'conv.6.weight': (16, 16, 3, 3), 'mu.weight': (16, 784), 'fc.weight': (784, 16),
                    'deconv.2.weight': (16, 16, 3, 3), 'deconv.8.weight': (8, 1, 4, 4), 'deconv.8.bias': (1,)}}

def small_vaes(img_shape=(1, 28, 28)):
    return [MLPVAE(8, 32, img_shape=img_shape), ConvVAE(4, 8, img_shape=img_shape), DeepConvVAE(16, 8, 16, img_shape=img_shape)]


def test_default_shape_builds_the_mnist_modules():
    for v, w in zip(small_vaes(), [MLPVAE(8, 32), ConvVAE(4, 8), DeepConvVAE(16, 8, 16)]):
        sd = {k: tuple(t.shape) for k, t in v.state_dict().items()}
        assert sd == {k: tuple(t.shape) for k, t in w.state_dict().items()} and v.img_shape == (1, 28, 28)
        assert all(sd[k] == s for k, s in MNIST_SHAPES[type(v).__name__].items())
    torch.manual_seed(0); a = ConvVAE(4, 8)
    torch.manual_seed(0); b = ConvVAE(4, 8, img_shape=(1, 28, 28))
    x = torch.rand(3, 1, 28, 28)
    assert torch.equal(a.eval()(x)[0], b.eval()(x)[0])                               # same seeded weights, same output


@pytest.mark.parametrize('shape', [(3, 32, 32), (1, 28, 28), (3, 28, 28), (1, 8, 8), (3, 64, 64)])
def test_vaes_build_for_the_shape(shape):
    x = torch.rand(4, *shape)
    for v in small_vaes(shape):
        xh, mu, lv = v.eval()(x)
        assert xh.shape == x.shape and mu.shape == (4, v.latent_dim) and 0 <= xh.min() and xh.max() <= 1
        assert v.decode(torch.randn(2, v.latent_dim)).shape == (2, *shape)
    assert ConvVAE(4, 8, img_shape=shape).deconv[1].unflattened_size == (16, shape[1]//4, shape[2]//4)


@pytest.mark.parametrize('kind', list(KINDS))
def test_bad_shapes_are_refused(kind):
    for bad in ((1, 30, 30), (3, 32), (0, 28, 28), 'rgb'):
        if kind == 'mlp' and bad == (1, 30, 30): continue                             # the MLP takes any size
        with pytest.raises(ValueError, match=r'image shape .* is not supported; accepted: \(C, H, W\)'): KINDS[kind](img_shape=bad)
    with pytest.raises(ValueError, match=r'was built for images \(N, 3, 32, 32\), got \(2, 1, 28, 28\)'):
        KINDS[kind](img_shape=(3, 32, 32)).reconstruct(torch.rand(2, 1, 28, 28))
    assert MLPVAE(8, 32).encode(torch.rand(2, 784))[0].shape == (2, 8)                # flattened images still go through the MLP
    assert check_img_shape(torch.Size([3, 32, 32]), 'x', 4) == (3, 32, 32)


def test_ga_and_hill_climb_on_colour_images():
    torch.manual_seed(0)
    shape = (3, 32, 32)
    clf = nn.Sequential(nn.Conv2d(3, 4, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3)).eval()
    x = torch.rand(4, *shape)
    for space in (latent_space(MLPVAE(8, 32, img_shape=shape)), latent_space(ConvVAE(4, 8, img_shape=shape)), pixel_space(shape)):
        r = ga_search(space, clf, x, pop=8, generations=3, sigma_init=0.5)
        assert r.x.shape == x.shape and r.v.shape == (4, space.d) and 0 <= r.x.min() and r.x.max() <= 1
        assert (r.label[r.found] != r.seed_label[r.found]).all() and r.probs.shape == (4, 3)
        obj = lambda im, i: predict_proba(clf, im)[torch.arange(len(im)), 0]
        v, xi, h = hill_climb(space, obj, x, iters=5)
        assert xi.shape == x.shape and (h[1:] <= h[:-1]).all()
    assert pixel_space('colour-mnist').d == 3*32*32 and pixel_space().shape == (1, 28, 28)


# --- ga_search and hill_climb run on `run_search` (SinvadGA / HillClimb given the seeds): frozen copies of their own loops as they
# were before, which they must match bit for bit (the same draws in the same order, the same float ops)
from latentnb.sinvad import SinvadResult, pixel_space, latent_space
from latentnb.generators.vae import MLPVAE


def old_rank_and_track(P, fit, guide, i, best_key, best_f, best_v):
    key = ranking_key(fit, guide); ar = torch.arange(len(P))[:, None]
    order = key.argsort(1); P, fit, key = P[ar, order], fit[ar, order], key[ar, order]
    better = key[:, 0] < best_key[i]
    best_key[i] = torch.where(better, key[:, 0], best_key[i]); best_f[i] = torch.where(better, fit[:, 0], best_f[i])
    best_v[i[better]] = P[better, 0]
    return P, fit

def old_result(space, clf, best_v, best_f, label, hist):
    x_best = space.decode(best_v); pb = predict_proba(clf, x_best)
    return SinvadResult(best_v, x_best, torch.isfinite(best_f), best_f, pb.argmax(1), label, pb, hist)

@torch.no_grad()
def old_ga_sinvad(space, clf, x_seed, target=None, pop=50, generations=500, parents=None, p_reset=0.5, sigma_init=0.7, min_step=1e-3, seed=0):
    "The 'sinvad' loop of ga_search before run_search (σ 0.1); also counts the generations after which only some seeds stopped"
    parents = sinvad_parents(pop) if parents is None else parents
    g = torch.Generator().manual_seed(seed)
    v0 = space.encode(x_seed).float(); S, d = v0.shape
    label = predict(clf, x_seed)
    tgt = None if target is None else torch.as_tensor(target).long().view(S, 1)
    P = space.clamp(v0[:, None] + sigma_init*torch.randn(S, pop, d, generator=g))
    sig, prev = torch.full((S, 1, 1), 0.1), torch.full((S,), float('inf'))
    best_key = torch.full((S,), float('inf'), dtype=torch.float64)
    best_v = v0.clone(); best_f = torch.full((S,), float('inf'))
    active, hist, partial = torch.ones(S, dtype=torch.bool), [], 0
    for gen in range(generations):
        i = active.nonzero().flatten(); n = len(i)
        probs = predict_proba(clf, space.decode(P[i].reshape(-1, d))).view(n, pop, -1)
        fit, guide = sinvad_fitness(P[i], v0[i, None], probs, label[i].view(n, 1), None if tgt is None else tgt[i], ord=1)
        Pi, fit = old_rank_and_track(P[i], fit, guide, i, best_key, best_f, best_v)
        hist.append(torch.isfinite(best_f).float().mean().item())
        s = sinvad_sigma(sig[i].view(n), fit[:, 0], prev[i])
        prev[i] = fit[:, 0]; sig[i] = s.view(n, 1, 1)
        P[i] = Pi; active[i] = s >= min_step
        if gen == generations - 1 or not active.any(): break
        partial += bool((~active[i]).any())
        i = active.nonzero().flatten()
        child = sinvad_offspring(P[i], v0[i], sig[i], pop - parents, g, p_reset, variant='sinvad', parents=parents)
        P[i] = torch.cat([P[i][:, :parents], space.clamp(child.reshape(-1, d)).view(len(i), -1, d)], 1)
    return old_result(space, clf, best_v, best_f, label, hist), partial

@torch.no_grad()
def old_ga_latentnb(space, clf, x_seed, target=None, pop=20, generations=30, elite=4, sigma=0.5, grow=1.25, shrink=0.9, p_reset=0.05, seed=0):
    g = torch.Generator().manual_seed(seed)
    v0 = space.encode(x_seed).float(); S, d = v0.shape
    label = predict(clf, x_seed)
    tgt = None if target is None else torch.as_tensor(target).long().view(S, 1)
    lab = label.view(S, 1)
    sig = torch.full((S, 1, 1), float(sigma))
    P = space.clamp(v0[:, None] + sig*torch.randn(S, pop, d, generator=g))
    best_key = torch.full((S,), float('inf'), dtype=torch.float64)
    best_v = v0.clone(); best_f = torch.full((S,), float('inf'))
    hist, every = [], torch.arange(S)
    for gen in range(generations):
        probs = predict_proba(clf, space.decode(P.reshape(-1, d))).view(S, pop, -1)
        fit, guide = sinvad_fitness(P, v0[:, None], probs, lab, tgt, ord=2)
        P, fit = old_rank_and_track(P, fit, guide, every, best_key, best_f, best_v)
        found = torch.isfinite(best_f); hist.append(found.float().mean().item())
        sig = (sig*torch.where(found, shrink, grow).view(S, 1, 1)).clamp(sigma/20, sigma*20)
        if gen == generations - 1: break
        child = sinvad_offspring(P, v0, sig, pop - elite, g, p_reset, variant='latentnb')
        P = torch.cat([P[:, :elite], space.clamp(child)], 1)
    return old_result(space, clf, best_v, best_f, label, hist)

@torch.no_grad()
def old_hill_climb(space, objective, x_seed, iters=20, step=None, coords=None, seed=0, variant='sinvad', target=None, tol=0.01, start=None):
    g = torch.Generator().manual_seed(seed)
    v = space.encode(x_seed).float() if start is None else torch.as_tensor(start).float().clone(); S, d = v.shape
    sidx = torch.arange(S)
    if variant == 'sinvad':
        score = objective if target is None else (lambda x, i: (objective(x, i) - target).abs())
        cur = score(space.decode(v), sidx); hist = [cur.clone()]
        st = torch.full((S,), 1.0 if step is None else float(step)); order = torch.randperm(d, generator=g)
        moved, live = torch.zeros(S, dtype=torch.bool), torch.ones(S, dtype=torch.bool)
        for t in range(iters):
            cand = space.clamp(element_move(v, st, int(order[t % d]), g))
            sc = score(space.decode(cand), sidx)
            imp = (sc < cur) & live
            v = torch.where(imp[:, None], cand, v); cur = torch.where(imp, sc, cur)
            moved |= imp
            if (t + 1) % d == 0: live &= moved; st, moved, order = st/2, torch.zeros(S, dtype=torch.bool), torch.randperm(d, generator=g)
            if target is not None: live &= cur >= tol
            hist.append(cur.clone())
        return v, space.decode(v), torch.stack(hist)
    cur = objective(space.decode(v), sidx); hist = [cur.clone()]
    st = torch.full((S,), 0.5 if step is None else float(step))
    for _ in range(iters):
        c = torch.randperm(d, generator=g)[:coords] if coords else torch.arange(d)
        k = len(c)
        cand = space.clamp(coordinate_moves(v, st, c))
        sc = objective(space.decode(cand.reshape(-1, d)), sidx.repeat_interleave(2*k)).view(S, 2*k)
        best, j = sc.min(1)
        imp = best < cur
        v = torch.where(imp[:, None], cand[sidx, j], v); cur = torch.where(imp, best, cur)
        st = torch.where(imp, st, st/2); hist.append(cur.clone())
    return v, space.decode(v), torch.stack(hist)

from latentnb.sinvad import coordinate_moves, element_move


def same(r, o):
    for f in ('v', 'x', 'found', 'distance', 'label', 'seed_label', 'probs'): assert torch.equal(getattr(r, f), getattr(o, f)), f
    assert r.history == o.history


@pytest.fixture(scope='module')
def spaces():
    "The toy pixel space (clamped to [0, 1]), a small VAE's latent space (unbounded), a 3-class classifier of each and seed images"
    torch.manual_seed(1)
    vae = MLPVAE(4, 16, img_shape=(1, 4, 4)).eval()
    clf = nn.Sequential(nn.Flatten(), nn.Linear(16, 3)).eval()
    with torch.no_grad(): clf[1].weight.mul_(8); clf[1].bias.copy_(-clf[1].weight.sum(1)*0.5)   # decisions that the searches can change
    x = torch.rand(7, 1, 4, 4)
    return dict(pixels=(pixel_space((1, 4, 4)), clf, x), latent=(latent_space(vae), clf, x))


@pytest.mark.parametrize('where', ['pixels', 'latent'])
@pytest.mark.parametrize('kw', [dict(pop=12, generations=60, sigma_init=0.5), dict(pop=10, generations=40, elite=3, p_reset=0.3, seed=2),
                                dict(pop=8, generations=500, sigma_init=1.0, seed=5), dict(pop=8, generations=500, sigma_init=0.2, min_step=0.02, seed=5)],
                         ids=['paper', 'elite', 'stops', 'min_step'])
@pytest.mark.parametrize('targeted', [False, True], ids=['eq1', 'eq4'])
def test_ga_search_sinvad_is_the_old_loop(spaces, where, kw, targeted):
    space, clf, x = spaces[where]
    tgt = (predict(clf, x) + 1) % 3 if targeted else None
    r = ga_search(space, clf, x, target=tgt, **kw)
    o, partial = old_ga_sinvad(space, clf, x, target=tgt, parents=kw.get('elite'),
                               **{k: v for k, v in kw.items() if k != 'elite'})
    same(r, o)
    if kw['generations'] == 500: assert partial and len(r.history) < 500 and r.found.any()   # seeds stopped at different generations


@pytest.mark.parametrize('where', ['pixels', 'latent'])
@pytest.mark.parametrize('targeted', [False, True], ids=['eq1', 'eq4'])
def test_ga_search_latentnb_is_the_old_loop(spaces, where, targeted):
    space, clf, x = spaces[where]
    tgt = (predict(clf, x) + 2) % 3 if targeted else None
    for kw in (dict(pop=10, generations=8, seed=3), dict(pop=6, generations=5, elite=2, sigma=0.2, grow=1.5, shrink=0.5, p_reset=0.2)):
        same(ga_search(space, clf, x, target=tgt, variant='latentnb', **kw), old_ga_latentnb(space, clf, x, target=tgt, **kw))


@pytest.mark.parametrize('where', ['pixels', 'latent'])
@pytest.mark.parametrize('kw', [dict(iters=40), dict(iters=11, step=0.3, seed=4), dict(iters=30, target=0.4, tol=0.05),
                                dict(variant='latentnb', iters=6), dict(variant='latentnb', iters=5, coords=3, step=1.0, seed=2),
                                dict(variant='latentnb', iters=4, coords=2, target=0.4)],
                         ids=['sinvad', 'sinvad-step', 'sinvad-target', 'latentnb-all', 'latentnb-coords', 'latentnb-ignores-target'])
def test_hill_climb_is_the_old_loop(spaces, where, kw):
    space, clf, x = spaces[where]
    lab = predict(clf, x)
    obj = lambda im, i: predict_proba(clf, im)[torch.arange(len(im)), lab[i]]
    for got, want in zip(hill_climb(space, obj, x, **kw), old_hill_climb(space, obj, x, **kw)): assert torch.equal(got, want)
    z0 = torch.randn(3, space.d, generator=torch.Generator().manual_seed(0)).clamp(space.low.min(), space.high.max())
    for got, want in zip(hill_climb(space, obj, None, start=z0, **kw), old_hill_climb(space, obj, None, start=z0, **kw)):
        assert torch.equal(got, want)


def test_the_entry_points_run_on_run_search(toy, monkeypatch):
    "ga_search and hill_climb are run_search with SinvadGA / HillClimb given the seeds: no budget, the decoded floats, the details"
    import latentnb.search.loop as ls   # the entry points call `run_to_end`, which calls the one loop (both in latentnb.search.loop)
    space, clf, x = toy
    calls, run = [], ls.run_search
    def spy(strategy, *a, **kw):
        res = run(strategy, *a, **kw); calls.append((strategy, kw, res)); return res
    monkeypatch.setattr(ls, 'run_search', spy)
    r = ga_search(space, clf, x, pop=6, generations=3)
    (s, kw, res), = calls
    assert isinstance(s, SinvadGA) and s.ends and s.done() and res.details is r and res.n_gen == len(r.history)
    assert kw['budget_s'] is None and kw['quantise'] is False and not res.interrupted
    obj = lambda im, i: im.mean((1, 2, 3))
    v, im, h = hill_climb(space, obj, x, iters=3)
    s, kw, res = calls[-1]
    assert isinstance(s, HillClimb) and s.ends and res.n_gen == 4 and res.n_evals == 4*len(x) and len(res.archive) == 0
    assert torch.equal(res.details[2], h)


def test_the_budget_is_called_generations(toy):
    "SINVAD's budget is `generations`, as GIFTbench's: one name, the old `gens` is refused"
    space, clf, x = toy
    assert SinvadGA(generations=7).generations == 7
    with pytest.raises(TypeError, match="unexpected keyword argument 'gens'"): ga_search(space, clf, x, pop=6, gens=3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'gens'"): SinvadGA(gens=7)
    with pytest.raises(ValueError, match='generations must be an integer >= 1'): SinvadGA(generations=0)


def test_given_seeds_are_checked():
    with pytest.raises(ValueError, match='go with given seeds'): SinvadGA(target=torch.zeros(2, 1))
    with pytest.raises(ValueError, match='need labels'): SinvadGA(seeds=torch.zeros(2, 3))
    with pytest.raises(ValueError, match='target is for'): HillClimb(start=torch.zeros(2, 3), target=0.5, variant='latentnb')
    with pytest.raises(ValueError, match='coords must be'): HillClimb(coords=None)           # drawn seeds: a random subset of coordinates
    assert HillClimb(start=torch.zeros(2, 3), coords=None).coords is None and not HillClimb().ends
    assert SinvadGA(seeds=torch.zeros(4, 3), labels=torch.zeros(4)).n_seeds == 4 and not SinvadGA().ends


def test_sinvad_sigma_resets_to_the_given_sigma(toy):
    "ga_search's docment: `sigma` is the mutation σ and its reset value (the old loop reset to 0.1 whatever `sigma` was)"
    from latentnb.search import Objective, run_search
    space, clf, x = toy
    s = SinvadGA(pop=20, generations=12, sigma=0.3, sigma_init=0.5, seeds=space.encode(x).float(), labels=predict(clf, x))
    res = run_search(s, space, Objective('misclassification', lambda im: predict_proba(clf, im)), budget_s=None, progress=False)
    assert res.details.found.any()                                                    # some σ was reset
    powers = torch.tensor([0.3*0.7**k for k in range(13)])
    assert all(torch.isclose(powers, v).any() for v in s.sig.flatten())


# --- the authors' rule (gen_bound_imgs.py): ranking by fitness alone, ties to the newest, 20 parents, the last generation's best parent
from latentnb.sinvad import SINVAD_RULES, authors_order
from latentnb.search import Objective
from latentnb.search.loop import run_to_end


def test_authors_order_is_pythons_stable_reverse_sort():
    import random
    rnd = random.Random(0)
    for _ in range(300):
        n = rnd.randint(2, 40); k = rnd.randint(1, n)
        s = [rnd.choice([0.5, 1.0, 2.0, float('inf')]) for _ in range(n)]
        assert authors_order(torch.tensor(s))[:k].tolist() == sorted(range(n), key=lambda i: s[i], reverse=True)[-k:][::-1]


def test_authors_rule_parents_and_checks():
    assert SINVAD_RULES == ('guided', 'authors')
    assert [sinvad_parents(p, 'authors') for p in (50, 20, 12)] == [20, 8, 4] and sinvad_parents(50) == 10
    assert SinvadGA(rule='authors').elite == 20 and SinvadGA().elite == 10
    with pytest.raises(ValueError, match="rule 'authors' goes with variant 'sinvad'"): SinvadGA(variant='latentnb', rule='authors')
    with pytest.raises(ValueError, match='rule must be one of'): sinvad_parents(50, 'x')


class Seen(SinvadGA):
    "SinvadGA keeping the population of each generation it asks for"
    def ask(self, space, objective):
        b = super().ask(space, objective); self.seen.append(self.P.clone()); return b


def test_authors_rule_returns_the_newest_when_nothing_crosses(toy):
    space, _, x = toy
    ga = Seen(seeds=space.encode(x).float(), labels=torch.zeros(len(x), dtype=torch.long), pop=7, generations=5, rule='authors'); ga.seen = []
    r = run_to_end(ga, space, Objective('misclassification', lambda im: torch.tensor([[.8, .1, .1]]).expand(len(im), 3)), seed=2)
    assert not r.found.any() and len(ga.seen) == 5
    assert torch.equal(r.v, ga.seen[-1][:, -1])                                       # parent_pop[-1]: the newest individual


def test_authors_rule_finds_on_toy(toy):
    space, clf, x = toy
    r = ga_search(space, clf, x, pop=20, generations=40, sigma_init=0.5, rule='authors')
    assert r.found.any() and (r.label[r.found] != r.seed_label[r.found]).all() and torch.isfinite(r.distance[r.found]).all()
    assert torch.equal(r.distance, ga_search(space, clf, x, pop=20, generations=40, sigma_init=0.5, rule='authors').distance)
