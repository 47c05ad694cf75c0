"""Today's search results, pinned (issue 41): the same seed and budget give the same archive, bit for bit.

Every strategy of `run_search` and every paper loop that the one-loop refactor replaces (SINVAD's `ga_search` and
`hill_climb`, GIFTbench's `giftbench_search`, DRfuzz's `drfuzz_search`, Argus's `generate`) is run with a fixed number
of evaluations, and a SHA-256 of everything it returns is compared with `tests/pins.json`:

- `ci`: on the demo stand-ins (a PCA generator and two ridge classifiers, `latentnb.demo`) and a seeded VQ-VAE;
- `quick`: on the committed `quick` checkpoints (the MNIST DCGAN, SINVAD's MLP VAE, GIFTbench's cGAN, zoo pair 1).

A move of code must leave every pin as it is. Pins are bit for bit only on a machine whose float kernels give the bytes
they gave where the pins were made: the file keeps one set of pins per environment (torch, NumPy, architecture and a
hash of a few convolutions and products on one thread, `kernels_key`), since two x86_64 CPUs with other vector units
(AVX2, AVX-512) round differently and a search then takes another path. An environment with pins of its own is compared
bit for bit; one that has none is compared with the pins of the same torch, NumPy and architecture made before the
kernels were part of the key, else its recorded sums to a relative 1e-4. To pin a new machine on unchanged code, or
re-pin after a change that is *meant* to change results: `LATENTNB_REPIN=1 .venv/bin/python -m pytest
tests/test_pinning.py` (it replaces this environment's pins only), and say why in the commit.
"""
import functools, hashlib, json, math, os, platform
from pathlib import Path

import numpy as np
import pytest
import torch

from latentnb.config import load_config
from latentnb.data import load_dataset
from latentnb.demo import demo_models
from latentnb.search.fitness import ReclusterPolicy
from latentnb.search import STRATEGIES, objective, run_search, search_space
import latentnb.sinvad, latentnb.giftbench, latentnb.diffgan.baseline, latentnb.argus   # the papers' strategies register on import

PINS = Path(__file__).with_name('pins.json')
REPIN = os.environ.get('LATENTNB_REPIN') == '1'

def kernels_key() -> str:
    "8 hex digits of the bytes a few seeded float32 convolutions and matrix products give on one thread here"
    n = torch.get_num_threads(); torch.set_num_threads(1)
    try:
        g = torch.Generator().manual_seed(0)
        x, w1, w2 = (torch.randn(s, generator=g) for s in ((64, 1, 28, 28), (32, 1, 3, 3), (64, 32, 3, 3)))
        y = torch.nn.functional.conv2d(torch.nn.functional.conv2d(x, w1, padding=1).relu(), w2, stride=2)
        t = torch.nn.functional.conv_transpose2d(y, w2, stride=2)
        m = y.flatten(1) @ torch.randn(y.flatten(1).shape[1], 256, generator=g)
        h = hashlib.sha256(b''.join(v.numpy().tobytes() for v in (y, t, m, m.softmax(1))))
    finally: torch.set_num_threads(n)
    return h.hexdigest()[:8]

@functools.cache   # one key per session: `check` runs once per pin
def env_key() -> str:
    return f"torch {torch.__version__}, numpy {np.__version__}, {platform.machine()}, kernels {kernels_key()}"

def _np(v):
    if isinstance(v, torch.Tensor): v = v.detach().cpu().numpy()
    return np.ascontiguousarray(np.asarray(v))

def fingerprint(**arrays) -> dict:
    "SHA-256 over every array's name, dtype, shape and bytes, plus each one's shape and float64 sum (for other platforms)"
    h, summary = hashlib.sha256(), {}
    for k in sorted(arrays):
        a = _np(arrays[k])
        h.update(f"{k}|{a.dtype}|{a.shape}|".encode()); h.update(a.tobytes())
        s = float(np.nansum(a.astype(np.float64))) if a.size else 0.0
        summary[k] = [list(a.shape), s]
    return dict(sha256=h.hexdigest(), summary=summary)

def _read() -> list:
    "[{'env', 'runs'}, ...]: one set of pins per environment (a file of one set, as first written, reads as a list of one)"
    d = json.loads(PINS.read_text()) if PINS.exists() else {}
    return d.get('pins', [d] if 'env' in d else [])

def _pins_for(env:str, sets:list):
    "The pins made in `env`, else those of its torch, NumPy and architecture made before the kernels joined the key (exact: False)"
    exact = [p for p in sets if p['env'] == env]
    if exact: return exact[0], True
    older = [p for p in sets if p['env'] == env.split(', kernels ')[0]]
    return (older[0], True) if older else (sets[0] if sets else None, False)

def check(name:str, fp:dict):
    "Compare `fp` with the pin `name` (or, under LATENTNB_REPIN=1, write it)"
    sets, env = _read(), env_key()
    if REPIN:
        mine = next((p for p in sets if p['env'] == env), None) or dict(env=env, runs={})
        mine['runs'] = dict(sorted((mine['runs'] | {name: fp}).items()))
        sets = [p for p in sets if p['env'] != env] + [mine]
        PINS.write_text(json.dumps(dict(pins=sets), indent=1) + '\n')
        return
    pins, exact = _pins_for(env, sets)
    assert pins and name in pins['runs'], f"no pin for {name!r} in {PINS.name}: make it on the unchanged code with LATENTNB_REPIN=1"
    p = pins['runs'][name]
    if exact:
        if fp['sha256'] != p['sha256']:
            moved = {k: (p['summary'].get(k), v) for k, v in fp['summary'].items() if p['summary'].get(k) != v}
            pytest.fail(f"{name}: results changed (pinned, now) {moved}")
        return
    assert set(fp['summary']) == set(p['summary']), f"{name}: other outputs than pinned"
    for k, (shape, s) in fp['summary'].items():
        ps, pv = p['summary'][k]
        assert shape == ps, f"{name}.{k}: shape {shape}, pinned {ps}"
        assert math.isclose(s, pv, rel_tol=1e-4, abs_tol=1e-6), f"{name}.{k}: sum {s}, pinned {pv} (pins made on {pins['env']})"

def archive_fp(res) -> dict:
    "The archive of a `SearchResult` (every stored field, in order) and its counters"
    a = res.archive.load()
    return fingerprint(**a, counts=np.array([res.n_evals, res.n_gen, res.n_trig_evals, len(res.archive),
                                            res.archive.n_near_unique]))

@pytest.fixture(scope='module', autouse=True)
def one_thread():
    "One torch thread for the models' fitting and the runs: a reduction over more threads may round differently"
    n = torch.get_num_threads(); torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)

# --- ci: the demo stand-ins --------------------------------------------------------------------------------------
@pytest.fixture(scope='module')
def demo():
    torch.manual_seed(0)
    gens, (a, b), x, y = demo_models('mnist', n_components=16, n_train=2000)
    i = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))[:400]   # the test split is sorted by class
    return next(iter(gens.values())), a, b, x[i], y[i]

# NSGA-II re-clusters by archive growth alone (`max_share=None`): the default also limits clustering to a share of the
# seconds spent, which makes a run depend on the machine's speed
CI_RUNS = {  # name: (strategy, objective, strategy parameters, evaluations)
    'random': ('random', 'differential', dict(batch=50), 200),
    'nsga2-divergence': ('nsga2', 'differential', dict(fitness=('divergence',), pop_size=20), 200),
    'nsga2': ('nsga2', 'differential', dict(pop_size=20, policy=ReclusterPolicy(max_share=None)), 400),
    'sinvad_ga': ('sinvad_ga', 'misclassification', dict(n_seeds=3, pop=10, generations=4), 150),
    'sinvad_ga-latentnb': ('sinvad_ga', 'misclassification', dict(n_seeds=3, pop=10, generations=4, variant='latentnb'), 150),
    'hill_climb': ('hill_climb', 'misclassification', dict(n_seeds=4, iters=3), 60),
    'hill_climb-latentnb': ('hill_climb', 'misclassification', dict(n_seeds=4, iters=3, coords=3, variant='latentnb'), 120),
    'gift_ga': ('gift_ga', 'misclassification', dict(n_seeds=3, pop=10, generations=4), 150),
    'gift_ga-latentnb': ('gift_ga', 'misclassification', dict(n_seeds=3, pop=10, generations=4, variant='latentnb'), 150),
    'interpolation': ('interpolation', 'differential', dict(n_seeds=3, n_partners=1, lams=(0.3, 0.6)), 150),
    'pixel_mutation': ('pixel_mutation', 'differential', dict(n_seeds=20, batch=40), 200),
    'argus': ('argus', 'misclassification', dict(n_seeds=6, n_partners=2, lam=0.3, bs=40), 108),   # new with the strategy
}

def test_every_strategy_is_pinned():
    assert {r[0] for r in CI_RUNS.values()} == set(STRATEGIES), "a strategy without a pin: add it to CI_RUNS"

@pytest.mark.parametrize('name', list(CI_RUNS))
def test_ci_strategy(demo, tmp_path, name):
    gen, a, b, x, y = demo
    strat, obj_name, kw, evals = CI_RUNS[name]
    obj = objective(obj_name, a, b if obj_name == 'differential' else None, device='cpu')
    res = run_search(strat, gen, obj, budget_s=1e9, max_evals=evals, images=(x, y), out_dir=tmp_path/'run',
                     seed=3, progress=False, **kw)
    assert res.n_evals >= evals
    check(f'ci/{name}', archive_fp(res))

# --- ci: the paper loops that the one loop replaces ------------------------------------------------------------------
def test_ci_sinvad_ga_search(demo):
    from latentnb.sinvad import ga_search
    gen, a, b, x, y = demo
    space = search_space(gen, box=None)
    for variant in ('sinvad', 'latentnb'):
        r = ga_search(space, a, x[:4], pop=10, generations=5, variant=variant, seed=1)
        check(f'ci/sinvad.ga_search-{variant}', fingerprint(v=r.v, x=r.x, found=r.found, distance=r.distance,
                                                            label=r.label, probs=r.probs, history=np.array(r.history)))

def test_ci_sinvad_hill_climb(demo):
    from latentnb.sinvad import hill_climb
    from latentnb.blackbox import predict_proba
    gen, a, b, x, y = demo
    space = search_space(gen, box=None)
    score = lambda im, i: predict_proba(a, im).max(1).values   # lower = less sure
    for variant in ('sinvad', 'latentnb'):
        v, im, hist = hill_climb(space, score, x[:4], iters=6, coords=4, variant=variant, seed=2)
        check(f'ci/sinvad.hill_climb-{variant}', fingerprint(v=v, x=im, history=hist))

def test_ci_giftbench_search(demo):
    from latentnb.giftbench import giftbench_search
    from latentnb.blackbox import predict_proba
    gen, a, b, x, y = demo
    z0 = gen.encode(x[:4]).cpu()
    for variant in ('gift', 'latentnb'):
        r = giftbench_search(gen, lambda im: predict_proba(a, im), z0, y[:4], pop=8, generations=5, step=0.5,
                             seed=4, progress=False, variant=variant)
        check(f'ci/giftbench_search-{variant}', fingerprint(failed=r.failed, iterations=r.iterations, z_fail=r.z_fail,
                                                            x_fail=r.x_fail, pred=r.pred, best_margin=r.best_margin))

def test_ci_diffgan_search(demo, tmp_path):
    "DiffGAN's entry point (its own argument checks and space around `run_search`'s nsga2)"
    from latentnb.diffgan import diffgan_search
    gen, a, b, x, y = demo
    res = diffgan_search(gen, a, b, budget_s=1e9, max_evals=300, out_dir=tmp_path/'dg', pop_size=20, seed=3, device='cpu',
                         policy=ReclusterPolicy(max_share=None), progress=False, seed_images=x[:100])
    check('ci/diffgan_search', archive_fp(res))

def test_ci_drfuzz_search(demo, tmp_path):
    from latentnb.diffgan.baseline import drfuzz_search
    gen, a, b, x, y = demo
    res = drfuzz_search(None, a, b, x[:50], budget_s=1e9, max_evals=300, out_dir=tmp_path/'fuzz', batch=50, per_seed=5,
                        seed=5, device='cpu', progress=False)
    check('ci/drfuzz_search', archive_fp(res))

def test_ci_argus_generate(demo):
    from latentnb.generators.vqvae import VQVAE
    from latentnb.argus import generate
    gen, a, b, x, y = demo
    torch.manual_seed(6)
    model = VQVAE().eval()
    out = generate(model, x[:5], y[:5], x[100:300], y[100:300], lam=0.3, n_partners=1, seed=6)
    check('ci/argus.generate', fingerprint(x=out['x'], seed_idx=out['seed_idx'], other_label=out['other_label']))

# --- quick: the committed checkpoints ------------------------------------------------------------------------------
@pytest.fixture(scope='module')
def quick():
    cfg = load_config('quick', seed_all=False)
    from latentnb.generators.gan import load_gan
    from latentnb.zoo import load_pair
    G, _ = load_gan('mnist', cfg=cfg)
    a, b = load_pair('mnist', 1, cfg=cfg)
    x, y = load_dataset('mnist', 'test')
    i = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))[:300]   # the test split is sorted by class
    return cfg, G, a, b, x[i], y[i]

QUICK_RUNS = {  # name: (generator, strategy, objective, strategy parameters, evaluations)
    'gan/random': ('gan', 'random', 'differential', dict(batch=100), 300),
    'gan/nsga2': ('gan', 'nsga2', 'differential', dict(pop_size=50, policy=ReclusterPolicy(max_share=None)), 600),
    'vae/sinvad_ga': ('vae', 'sinvad_ga', 'misclassification', dict(n_seeds=4, pop=20, generations=3), 240),
    'vae/hill_climb': ('vae', 'hill_climb', 'misclassification', dict(n_seeds=8, iters=10), 400),
    'vae/interpolation': ('vae', 'interpolation', 'differential', dict(n_seeds=4, n_partners=1, lams=(0.4,)), 72),
    'cgan/gift_ga': ('cgan', 'gift_ga', 'misclassification', dict(n_seeds=4, pop=10, generations=20, step=1.0), 600),
    'pixels/pixel_mutation': ('pixels', 'pixel_mutation', 'differential', dict(n_seeds=30, batch=50), 200),
    'vae/argus': ('vae', 'argus', 'misclassification', dict(n_seeds=4, n_partners=2, lam=0.4, bs=24), 72),   # new with the strategy
}

def _quick_generator(kind, cfg, G):
    from latentnb.generators import as_generator
    if kind == 'gan': return as_generator(G)
    if kind == 'vae':
        from latentnb.sinvad import latent_space
        from latentnb.generators.vae import load_vae
        return latent_space(load_vae('mnist', 'mlp', cfg=cfg, progress=False))
    if kind == 'cgan':
        from latentnb.generators.conditional import load_cgan
        return as_generator(load_cgan('mnist', cfg=cfg))
    return 'pixels'

def test_every_strategy_is_pinned_under_quick():
    assert {r[1] for r in QUICK_RUNS.values()} == set(STRATEGIES), "a strategy without a quick pin: add it to QUICK_RUNS"

@pytest.mark.parametrize('name', list(QUICK_RUNS))
def test_quick_strategy(quick, tmp_path, name):
    cfg, G, a, b, x, y = quick
    kind, strat, obj_name, kw, evals = QUICK_RUNS[name]
    obj = objective(obj_name, a, b if obj_name == 'differential' else None, device='cpu')
    res = run_search(strat, _quick_generator(kind, cfg, G), obj, budget_s=1e9, max_evals=evals, images=(x, y),
                     out_dir=tmp_path/'run', seed=7, progress=False, **kw)
    assert res.n_evals >= evals
    check(f'quick/{name}', archive_fp(res))
