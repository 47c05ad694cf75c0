"Plain behaviour of latentnb.giftbench: fitness, the GA on a toy generator, Table III (classifier checks: test_blackbox)."
import math, pytest, torch, torch.nn.functional as F
from latentnb.generators import LatentGenerator, cgan_generator
from latentnb.giftbench import margin, viable_seeds, giftbench_search, summarise, table3
from latentnb.generators.conditional import CondGenerator
from latentnb.demo import toy_classifier

toy_clf = toy_classifier   # class = round(10 × mean brightness) (latentnb.demo)

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
    r1 = giftbench_search(g, toy_clf, vs['z'], vs['y'], pop=6, generations=30, step='high', progress=False, variant='latentnb')
    r2 = giftbench_search(g, toy_clf, vs['z'], vs['y'], pop=6, generations=30, step='high', progress=False, variant='latentnb')
    assert r1.failed.all() and (r1.pred != r1.y).all() and r1.z_fail.abs().max() <= 3
    assert torch.equal(r1.iterations, r2.iterations)
    assert torch.equal(toy_clf(r1.x_fail).argmax(1), r1.pred)

def test_low_step_exhausts_budget():
    g = ToyGen(); vs = viable_seeds(g, toy_clf, 10)
    r = giftbench_search(g, toy_clf, vs['z'], vs['y'], pop=4, generations=3, step='low', progress=False, variant='latentnb')
    assert not r.failed.any() and (r.iterations == 3).all()
    row = summarise(r, 'toy', 'low'); assert row['n_misclassified'] == 0
    assert table3([row])['% misclassification (#)'][0] == '0.0 (0)'

def test_cgan_generator_shapes():
    gen = cgan_generator(CondGenerator(ngf=8), 'cGAN')
    z = gen.candidates(torch.arange(3), torch.Generator().manual_seed(0))
    x = gen.decode(z, torch.arange(3))
    assert x.shape == (3, 1, 28, 28) and 0 <= x.min() and x.max() <= 1
    with pytest.raises(ValueError, match='class-conditional'): gen.decode(z)

def test_train_cgan_ends_on_cpu_with_ema_generator():
    from latentnb.generators.conditional import CGAN, train_cgan
    torch.manual_seed(0)
    gan = CGAN(width=8); x, y = torch.rand(32, 1, 28, 28), torch.randint(0, 10, (32,))
    m = train_cgan(gan, x, y, epochs=1, bs=16, device='cpu', progress=False)
    assert m['steps'] == 2 and m['device'] == 'cpu' and not gan.G.training
    assert all(p.device.type == 'cpu' for p in gan.parameters())
    out, logits = gan.D(x[:3], y[:3], with_aux=True)
    assert out.shape == (3,) and logits.shape == (3, 10)

def test_guided_unet_combines_conditional_and_unconditional_noise():
    from latentnb.generators.conditional import build_unet
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
    g = ddim_generator(m, 2, name='DDIM')
    assert g.conditional and g.n_classes == 10 and g.latent_shape == (1, 28, 28)

def test_export_zip_holds_every_viable_seed(tmp_path):
    import zipfile, pandas as pd
    from latentnb.giftbench import export_zip
    g = ToyGen(); vs = viable_seeds(g, toy_clf, 10)
    r = giftbench_search(g, toy_clf, vs['z'], vs['y'], pop=4, generations=2, step='high', progress=False, variant='latentnb')
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

def test_panel_starts_on_the_running_dataset(monkeypatch):
    "The panel's dataset is $LATENTNB_DATASET's when set (a dataset the models build for), else MNIST"
    from latentnb.config import load_config
    from latentnb.giftbench import GiftbenchPanel
    monkeypatch.delenv('LATENTNB_DATASET', raising=False)
    assert GiftbenchPanel(load_config('ci', seed_all=False)).dataset.value == 'mnist'
    monkeypatch.setenv('LATENTNB_DATASET', 'colour-mnist')
    cfg = load_config('ci', seed_all=False); assert cfg.dataset == 'colour-mnist'
    assert GiftbenchPanel(cfg).dataset.value == 'colour-mnist'


# --- the authors' GA (variant 'gift', the default): deeptestai/genai_tigs tig_*.py
from latentnb.giftbench import logit_margin, gift_extent
from latentnb.giftbench import gift_offspring, gift_step, gift_sigma, gift_parents

def test_logit_margin_is_the_logit_difference():
    lg = torch.tensor([[2., 0.5, -1.], [0., 3., 1.]])
    assert torch.allclose(logit_margin(F.softmax(lg, 1), torch.tensor([0, 2])), torch.tensor([1.5, -2.]), atol=1e-5)

def test_gift_step_matches_the_authors_csv():
    assert abs(gift_step(-5.41362476348877, 5.42081117630005, 'low') - 0.00216688718795776) < 1e-12   # their MNIST SD init_p
    assert gift_step(0, 1, 'high') == 10*gift_step(0, 1, 'low')
    with pytest.raises(ValueError, match='hi > lo'): gift_step(1, 1, 'low')

def test_gift_sigma_doubles_on_stall_and_resets():
    s = torch.tensor([.1, .4]); best = torch.tensor([1., 2.])
    assert torch.equal(gift_sigma(s, .1, best, best.clone()), torch.tensor([.2, .8]))
    assert torch.equal(gift_sigma(s, .1, best, best + 1), torch.tensor([.1, .1]))

def test_gift_offspring_keeps_the_best_and_mutates_only_changed_genes():
    g = torch.Generator().manual_seed(0)
    P = torch.randn(3, 25, 8); M = torch.randn(3, 25); origin = P[:, 0].clone()
    out = gift_offspring(P, M, gift_parents(25), 1.0, 0.5, g, origin=origin)
    assert out.shape == P.shape
    assert torch.equal(out[:, :10], P.gather(1, M.argsort(1)[:, :10, None].expand(-1, -1, 8)))   # truncation: the 10 best, unchanged
    same = torch.zeros(1, 25, 4); child = gift_offspring(same, torch.arange(25.)[None], 10, 1.0, 1.0, g, origin=torch.zeros(1, 4))
    assert torch.equal(child, same)                                                         # genes equal to the seed's latent never mutate

def test_gift_search_stays_in_the_latent_range_and_low_finds_less():
    g = ToyGen(); vs = viable_seeds(g, toy_clf, 10)
    lo, hi = gift_extent(g)
    hi_r = giftbench_search(g, toy_clf, vs['z'], vs['y'], pop=25, generations=120, step='high', progress=False)
    lo_r = giftbench_search(g, toy_clf, vs['z'], vs['y'], pop=25, generations=120, step='low', progress=False)
    assert hi_r.variant == 'gift' and hi_r.bounds == (lo, hi)
    assert hi_r.z_fail.min() >= lo and hi_r.z_fail.max() <= hi
    assert hi_r.failed.sum() > lo_r.failed.sum()
    assert torch.equal(hi_r.iterations, giftbench_search(g, toy_clf, vs['z'], vs['y'], pop=25, generations=120, step='high', progress=False).iterations)
    with pytest.raises(ValueError, match='variant must be'): giftbench_search(g, toy_clf, vs['z'], vs['y'], variant='x')


# --- models of the dataset's shape (1x28x28 unchanged; 3x32x32 for SVHN / CIFAR-10 / colour-mnist)
from latentnb.giftbench import GiftDeepConv
from latentnb.generators.conditional import (CGAN, build_unet, GIFT_RULE, dataset_shape, cgan_spec, ddpm_spec, train_cgan,
                                             train_ddpm, DATASETS)
from latentnb.data import check_img_shape, DEFAULT_SHAPE

def _keys(m): return [(k, tuple(v.shape)) for k, v in m.state_dict().items()]

def test_default_shape_builds_the_committed_modules():
    "The 1x28x28 modules are those of the committed checkpoints: the sizes the code had before `img_shape` existed"
    g = CGAN(width=8)
    assert dict(_keys(g))['G.fc.weight'] == (2*8*7*7, 116) and dict(_keys(g))['D.lin.weight'] == (1, 2*8*7*7)
    assert dict(_keys(g))['G.out.weight'] == (1, 4, 3, 3) and dict(_keys(g))['D.body.0.weight'] == (8, 1, 4, 4)
    assert dict(_keys(GiftDeepConv()))['head.1.weight'] == (512, 64*7*7)
    u = build_unet((8, 16, 16)).unet.config
    assert (u.sample_size, u.in_channels, u.out_channels, u.num_class_embeds) == (28, 1, 1, 11)
    torch.manual_seed(1); a = CGAN(width=8).state_dict()
    torch.manual_seed(1); b = CGAN(width=8, img_shape=(1, 28, 28)).state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)

@pytest.mark.parametrize('shape', [(3, 32, 32), (1, 16, 16), (3, 28, 28)])
def test_models_build_for_the_shape(shape):
    torch.manual_seed(0)
    gan = CGAN(n_classes=26, width=8, img_shape=shape).eval()
    x = gan.G(torch.randn(4, 100), torch.arange(4))
    assert x.shape == (4, *shape) and 0 <= x.min() and x.max() <= 1
    out, aux = gan.D(x, torch.arange(4), with_aux=True)
    assert out.shape == (4,) and aux.shape == (4, 26)
    m = build_unet((8, 16, 16), img_shape=shape, guidance=1.5).eval()
    with torch.no_grad(): assert m(torch.randn(2, *shape), 10, class_labels=torch.tensor([0, 1])).sample.shape == (2, *shape)
    assert GiftDeepConv(n_classes=26, img_shape=shape)(torch.rand(2, *shape)).shape == (2, 26)

def test_colour_training_runs_and_lowers_the_diffusion_loss():
    torch.manual_seed(0)
    x, y = torch.rand(32, 3, 32, 32), torch.randint(0, 10, (32,))
    gan = CGAN(width=8, img_shape=(3, 32, 32))
    m = train_cgan(gan, x, y, epochs=1, bs=16, progress=False)
    assert m['steps'] == 2 and math.isfinite(m['loss_G']) and math.isfinite(m['loss_D'])
    u = build_unet((8, 16, 16), img_shape=(3, 32, 32))
    assert math.isfinite(train_ddpm(u, x, y, steps=3, bs=8, progress=False)['loss'])
    with pytest.raises(ValueError, match=r'images shaped \(1, 28, 28\), but the cGAN builds \(3, 32, 32\)'):
        train_cgan(gan, torch.rand(4, 1, 28, 28), y[:4], progress=False)
    with pytest.raises(ValueError, match='but the UNet builds'): train_ddpm(u, torch.rand(4, 1, 28, 28), y[:4], steps=1, progress=False)

@pytest.mark.parametrize('bad', [(3, 30, 30), (1, 28, 32), (2, 28), (0, 28, 28), (1, 4, 4)])
def test_bad_shapes_are_refused_clearly(bad):
    for f in (lambda s: check_img_shape(s, **GIFT_RULE), lambda s: CGAN(img_shape=s),
              lambda s: build_unet(img_shape=s), lambda s: GiftDeepConv(img_shape=s)):
        with pytest.raises(ValueError, match=r'is not supported.*square sides H = W, H and W multiples of 4'): f(bad)

def test_datasets_of_a_supported_shape_are_accepted_and_specs_stay_for_mnist():
    from latentnb.config import load_config
    cfg = load_config('ci', seed_all=False)
    assert {'mnist', 'fashion-mnist', 'colour-mnist', 'cifar10', 'svhn', 'emnist-letters'} <= set(DATASETS)
    assert dataset_shape('svhn') == ((3, 32, 32), 10) and dataset_shape('emnist-letters') == (DEFAULT_SHAPE, 26)
    for ds in ('mnist', 'fashion-mnist'):
        assert not {'img_shape', 'n_classes'} & (set(cgan_spec(ds, cfg)) | set(ddpm_spec(ds, cfg)))
    assert cgan_spec('cifar10', cfg)['img_shape'] == [3, 32, 32] and ddpm_spec('emnist-letters', cfg)['n_classes'] == 26
    with pytest.raises(ValueError, match="Unknown dataset 'imagenet'; accepted: mnist"): dataset_shape('imagenet')

def test_search_without_viable_seeds_keeps_the_image_shape():
    "No seed viable: the empty image tensors still have the generator's (C, H, W)"
    gen = cgan_generator(CGAN(width=8, img_shape=(3, 32, 32)), 'cGAN')
    never = lambda x: F.one_hot(torch.full((len(x),), 9), 10).float()       # always answers 9; seeds of label 0 are never viable
    vs = viable_seeds(gen, never, 3)
    assert len(vs['y']) == 0
    r = giftbench_search(gen, never, vs['z'], vs['y'], pop=4, generations=2, progress=False)
    assert r.x0.shape == (0, 3, 32, 32) and r.x_fail.shape == (0, 3, 32, 32)

def test_colour_images_export_as_rgb(tmp_path):
    import io, zipfile
    from PIL import Image
    from latentnb.giftbench import export_zip
    gen = cgan_generator(CGAN(width=8, img_shape=(3, 32, 32)), 'cGAN')
    yes = lambda x: F.one_hot(torch.zeros(len(x), dtype=torch.long), 10).float()   # labels 0 are always right
    vs = viable_seeds(gen, yes, 1)
    r = giftbench_search(gen, yes, vs['z'], vs['y'], pop=4, generations=1, progress=False)
    z = zipfile.ZipFile(export_zip(r, tmp_path/'c.zip', 'colour-mnist', 'clf'))
    png = [n for n in z.namelist() if n.endswith('.png')]
    assert len(png) == 2 and all(Image.open(io.BytesIO(z.read(n))).mode == 'RGB' for n in png)


# --- giftbench_search on the one loop (`run_search` with `GiftGA` given the seeds)
import inspect, pickle
from latentnb.search import run_search
from latentnb.giftbench import GiftGA, GiftObjective, gift_space, gift_extent

def CondToy():
    "A class-conditional toy: the label shifts the brightness a little, so the space has a class coordinate"
    dec = lambda z, y: torch.sigmoid(z[:, :1] + y.float()[:, None]/20)[:, :, None, None].expand(-1, 1, 28, 28)
    return LatentGenerator('condtoy', dec, (3,), 'normal', (-3.0, 3.0), conditional=True, steps={'low': 0.05, 'high': 0.5})

@pytest.mark.parametrize('variant', ['gift', 'latentnb'])
def test_giftbench_search_is_gift_ga_on_run_search(variant):
    g = CondToy(); vs = viable_seeds(g, toy_clf, 20)
    calls = []
    r = giftbench_search(g, toy_clf, vs['z'], vs['y'], pop=6, generations=12, step=1.0, seed=3, progress=False, variant=variant,
                         callback=lambda *a: calls.append(a))
    bounds = gift_extent(g) if variant == 'gift' else g.bounds
    ga = GiftGA(pop=6, generations=12, step=1.0, variant=variant, seeds=(vs['z'], vs['y']),
                extent=bounds if variant == 'gift' else None)
    s = run_search(ga, gift_space(g, bounds), GiftObjective(toy_clf, variant), budget_s=None, seed=3, progress=False, quantise=False)
    for k in ('failed', 'iterations', 'z_fail', 'pred', 'best_margin'):
        assert torch.equal(s.details[k].nan_to_num(-9), getattr(r, k).nan_to_num(-9)), k
    assert r.bounds == bounds and r.z_fail.shape == (len(vs['y']), 3)                   # the class coordinate is no gene
    assert s.n_gen == int(r.iterations.max()) and s.n_evals == 6*int(r.iterations.sum())   # a seed leaves at its failure
    gens = [c[0] for c in calls]
    assert gens == sorted(gens) and calls[-1] == (12, 0)
    assert ga.ends and ga.done() and not GiftGA().ends

def test_gift_search_clamps_to_the_authors_range_not_the_generators_bounds():
    g = CondToy(); vs = viable_seeds(g, toy_clf, 20); lo, hi = gift_extent(g)
    assert lo < -3 and hi > 3                                                           # prior draws, unclamped
    r = giftbench_search(g, toy_clf, vs['z'], vs['y'], pop=6, generations=6, step=20.0, progress=False)   # steps far past ±3
    assert r.z_fail.min() >= lo and r.z_fail.max() <= hi and r.z_fail.abs().max() > 3

def test_the_generation_step_exists_once():
    src = inspect.getsource(giftbench_search)
    from latentnb.search import run_to_end   # the one loop, run to the strategy's end
    assert 'run_to_end(' in src and 'run_search(' in inspect.getsource(run_to_end)
    assert 'gift_offspring' not in src and 'randn' not in src
    import latentnb.giftbench.core as G
    assert inspect.getsource(G).count('gift_offspring(') == 2                        # its definition and `GiftGA.tell`

def test_gift_ga_with_seeds_pickles_without_its_callback_and_checks_them():
    g = CondToy(); vs = viable_seeds(g, toy_clf, 20)
    ga = GiftGA(pop=4, generations=2, seeds=(vs['z'], vs['y']), callback=print)
    st = pickle.loads(pickle.dumps(ga))
    assert not hasattr(st, 'callback') and torch.equal(st.z_seed, ga.z_seed)
    with pytest.raises(ValueError, match='1 latent coordinates'):
        run_search(GiftGA(seeds=(vs['z'][:, :1], vs['y'])), gift_space(g, None), GiftObjective(toy_clf), budget_s=None, progress=False)
    with pytest.raises(ValueError, match='seed latents but'): GiftGA(seeds=(vs['z'], vs['y'][1:]))
