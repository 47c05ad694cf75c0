"""Bad budgets and sizes fail at every search entry point, at once, naming the argument and what is accepted (issue 41, item 3).

Before: `diffgan_search(budget_s=-5)` ran 100 evaluations, `budget_s=float('nan')` never stopped, `max_evals=0` ran
3,700 evaluations, `pop_size=0` failed with a message about the generator's vector shape, `pop_size=1` was accepted.
"""
import pytest
import torch

from latentnb.demo import demo_models
from latentnb.search import STRATEGIES, as_strategy, objective, run_search
import latentnb.sinvad, latentnb.giftbench, latentnb.diffgan.baseline, latentnb.argus   # the papers' strategies register on import

BAD_BUDGETS = [  # (keyword arguments, the words the error must contain)
    (dict(budget_s=-5), 'budget_s must be a number of seconds > 0'),
    (dict(budget_s=0), 'budget_s must be a number of seconds > 0'),
    (dict(budget_s=float('nan')), 'budget_s must be a number of seconds > 0'),
    (dict(budget_s=float('inf')), "float('inf') only with max_evals"),
    (dict(budget_s='60'), 'budget_s must be'),
    (dict(max_evals=0), 'max_evals must be an integer >= 1'),
    (dict(max_evals=-3), 'max_evals must be an integer >= 1'),
    (dict(max_evals=2.5), 'max_evals must be an integer >= 1'),
]

@pytest.fixture(scope='module')
def demo():
    gens, (a, b), x, y = demo_models('mnist', n_components=8, n_train=500)
    return next(iter(gens.values())), a, b, x[:200], y[:200]

def _never(*a, **k): raise AssertionError('the search started despite a bad argument')

def entry_points(demo):
    "Every search entry point, called with `kw` on the demo stand-ins; each must raise before evaluating anything"
    from latentnb.diffgan import diffgan_search, random_search
    from latentnb.diffgan.baseline import drfuzz_search
    gen, a, b, x, y = demo
    obj = objective('differential', a, b, device='cpu')
    return {
        'run_search': lambda **kw: run_search('random', gen, obj, progress=False, images=(x, y), callback=_never, **kw),
        'diffgan_search': lambda **kw: diffgan_search(gen, a, b, progress=False, device='cpu', callback=_never, **kw),
        'random_search': lambda **kw: random_search(gen, a, b, progress=False, device='cpu', **kw),
        'drfuzz_search': lambda **kw: drfuzz_search(None, a, b, x[:20], progress=False, device='cpu', callback=_never, **kw),
    }

@pytest.mark.parametrize('kw,words', BAD_BUDGETS, ids=[f'{k}={v}' for (d, _) in BAD_BUDGETS for k, v in d.items()])
@pytest.mark.parametrize('entry', ['run_search', 'diffgan_search', 'random_search', 'drfuzz_search'])
def test_bad_budget(demo, entry, kw, words):
    with pytest.raises(ValueError, match=words.replace('(', r'\(').replace(')', r'\)')):
        entry_points(demo)[entry](**kw)

def test_inf_budget_with_a_cap_runs(demo):
    gen, a, b, x, y = demo
    r = run_search('random', gen, objective('differential', a, b, device='cpu'), budget_s=float('inf'), max_evals=100,
                   progress=False, batch=50)
    assert r.n_evals == 100

@pytest.mark.parametrize('pop', [0, 1, -2, 2.0])
def test_diffgan_pop_size(demo, pop):
    from latentnb.diffgan import diffgan_search
    gen, a, b, x, y = demo
    with pytest.raises(ValueError, match=r"pop_size must be an integer >= 2 \(NSGA-II's crossover needs two parents\)"):
        diffgan_search(gen, a, b, budget_s=5, pop_size=pop, progress=False, device='cpu')

SIZES = [  # (strategy, parameter, a bad value, the error's words)
    ('random', 'batch', 0, 'batch must be an integer >= 1'),
    ('nsga2', 'pop_size', 1, 'pop_size must be an integer >= 2'),
    ('nsga2', 'restart_gens', -1, 'restart_gens must be an integer >= 0'),
    ('sinvad_ga', 'n_seeds', 0, 'n_seeds must be an integer >= 1'),
    ('sinvad_ga', 'pop', 1, 'pop must be an integer >= 2'),
    ('sinvad_ga', 'generations', 0, 'generations must be an integer >= 1'),
    ('hill_climb', 'iters', 0, 'iters must be an integer >= 1'),
    ('hill_climb', 'coords', 0, 'coords must be an integer >= 1'),
    ('gift_ga', 'pop', 1, 'pop must be an integer >= 2'),
    ('gift_ga', 'generations', 0, 'generations must be an integer >= 1'),
    ('interpolation', 'n_partners', 0, 'n_partners must be an integer >= 1'),
    ('interpolation', 'lams', (), 'lams must name at least one'),
    ('pixel_mutation', 'batch', 0, 'batch must be an integer >= 1'),
    ('pixel_mutation', 'max_corpus', 5, 'max_corpus must be an integer >= 100'),
    ('argus', 'n_partners', 0, 'n_partners must be at least 1'),
    ('argus', 'bs', 0, 'bs must be an integer >= 1'),
]

def test_every_strategy_checks_a_size():
    assert {s for s, *_ in SIZES} == set(STRATEGIES)

@pytest.mark.parametrize('strategy,param,value,words', SIZES, ids=[f'{s}.{p}={v}' for s, p, v, _ in SIZES])
def test_strategy_sizes(demo, strategy, param, value, words):
    with pytest.raises(ValueError, match=words): as_strategy(strategy, **{param: value})
    gen, a, b, x, y = demo   # and through the loop, before any evaluation
    with pytest.raises(ValueError, match=words):
        run_search(strategy, gen, objective('differential', a, b, device='cpu'), budget_s=5, images=(x, y),
                   progress=False, callback=_never, **{param: value})

def test_paper_loops_check_their_sizes(demo):
    from latentnb.sinvad import ga_search, hill_climb
    from latentnb.search import search_space
    gen, a, b, x, y = demo
    space = search_space(gen, box=None)
    with pytest.raises(ValueError, match='pop must be an integer >= 2'): ga_search(space, a, x[:2], pop=1)
    with pytest.raises(ValueError, match='generations must be an integer >= 1'): ga_search(space, a, x[:2], generations=0)
    with pytest.raises(ValueError, match='iters must be an integer >= 1'): hill_climb(space, lambda im, i: im.mean((1, 2, 3)), x[:2], iters=0)
