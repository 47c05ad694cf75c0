"""Arguments and answers checked before any damage (issue 61): GIFTbench's classifier on its first batch, GIFTbench's and
SINVAD's GA settings before any work.

Before: `giftbench_search` with a model answering NaN reported every seed as failed at generation 1, took logits for
probabilities, and SINVAD's `ga_search(elite > pop)` failed mid-search with "negative dimension".
"""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from latentnb.blackbox import BlackBox, check_model
from latentnb.demo import toy_classifier, toy_generator
from latentnb.giftbench import GiftDeepConv, GiftObjective, check_classify, giftbench_search, viable_seeds
from latentnb.search import Objective, run_search, search_space
from latentnb.sinvad import SinvadGA, ga_search


class Counting:
    "A classifier (images -> scores) that records the size of every batch it is asked"
    def __init__(self, fn): self.fn, self.asked, self.__name__ = fn, [], getattr(fn, '__name__', 'counting')
    def __call__(self, x): self.asked.append(len(x)); return self.fn(x)

def toy_logits(x):
    "The toy classifier's logits: its softmax is `toy_classifier`, bit for bit"
    return -(torch.as_tensor(x).float().mean((1, 2, 3))[:, None]*10 - torch.arange(10.))**2*5

def nan_model(x): return torch.full((len(x), 10), float('nan'))

@pytest.fixture(scope='module')
def toy():
    "The toy generator with a decoder that counts its calls, and 10 viable seeds"
    gen = toy_generator(); decode, calls = gen.decode, []
    gen.decode = lambda *a, **k: calls.append(1) or decode(*a, **k)
    vs = viable_seeds(gen, toy_classifier, 10)
    calls.clear()
    return gen, vs, calls

GIFT_KW = dict(pop=6, generations=30, step='high', progress=False, variant='latentnb')


# --- GIFTbench: the classifier, on the first batch

def test_giftbench_nan_model_fails_on_the_first_batch(toy):
    gen, vs, _ = toy
    clf = Counting(nan_model)
    with pytest.raises(ValueError, match=r'classify: nan_model answered non-finite scores \(NaN or inf\) for 10 of 10 inputs; '
                                         r'accepted: a classifier of float images .* answering finite probabilities or logits'):
        giftbench_search(gen, clf, vs['z'], vs['y'], **GIFT_KW)
    assert clf.asked == [10]                                    # the seeds' images, once: no generation ran

def test_run_giftbench_nan_model_fails_when_drawing_the_seeds(toy):
    gen, _, _ = toy
    clf = Counting(nan_model)
    with pytest.raises(ValueError, match='nan_model answered non-finite scores'): viable_seeds(gen, clf, 5)
    assert clf.asked == [5]

def test_giftbench_logits_model_searches_on_their_softmax(toy):
    gen, vs, _ = toy
    r = giftbench_search(gen, toy_classifier, vs['z'], vs['y'], **GIFT_KW)
    rl = giftbench_search(gen, toy_logits, vs['z'], vs['y'], **GIFT_KW)
    rb = giftbench_search(gen, BlackBox(toy_logits), vs['z'], vs['y'], **GIFT_KW)   # the library's black box of the same model
    for k in ('failed', 'iterations', 'z_fail', 'pred', 'best_margin'):
        assert torch.equal(getattr(rl, k).nan_to_num(-9), getattr(r, k).nan_to_num(-9)), k
        assert torch.equal(getattr(rl, k).nan_to_num(-9), getattr(rb, k).nan_to_num(-9)), k
    assert rl.best_margin.nan_to_num(0).abs().max() <= 1       # margins of probabilities, not of logits

def test_giftbench_module_answering_logits_is_its_checked_black_box(toy):
    gen, vs, _ = toy
    torch.manual_seed(0); m = GiftDeepConv().eval()              # GIFTbench's own net answers logits, as `gift_classifier`'s
    x = gen.decode(vs['z'], vs['y'])
    with torch.no_grad(): assert not torch.allclose(m(x).sum(1), torch.ones(len(x)))
    a = giftbench_search(gen, m, vs['z'], vs['y'], pop=4, generations=3, progress=False)
    b = giftbench_search(gen, check_model(m), vs['z'], vs['y'], pop=4, generations=3, progress=False)   # Table III's path
    for k in ('failed', 'iterations', 'z_fail', 'pred', 'best_margin'):
        assert torch.equal(getattr(a, k).nan_to_num(-9), getattr(b, k).nan_to_num(-9)), k

def test_project_classifiers_are_asked_as_they_are(toy):
    "The paper's path (a `check_model` black box) and probability answers: the very same callable, so the numbers do not change"
    gen, vs, _ = toy
    x = gen.decode(vs['z'], vs['y'])
    bb = check_model(GiftDeepConv().eval(), data='mnist')
    assert check_classify(bb, x) is bb and check_classify(toy_classifier, x) is toy_classifier
    assert isinstance(check_classify(toy_logits, x), BlackBox)

def test_giftbench_labels_outside_the_classifier_fail(toy):
    gen, vs, _ = toy
    clf = Counting(lambda x: toy_classifier(x)[:, :5])
    with pytest.raises(ValueError, match=r"y must hold labels of the classifier's 5 classes \(0 to 4\), got labels 0 to 9"):
        giftbench_search(gen, clf, vs['z'], vs['y'], **GIFT_KW)
    assert clf.asked == [10]


# --- GIFTbench: its other arguments, before anything is decoded or asked

BAD_GIFT = [  # (keyword arguments, the words the error must contain)
    (dict(pop=25, elite=30), "elite must be an integer with 2 <= elite < pop for the 'gift' variant (two distinct parents and "
                             "at least one child), got elite=30, pop=25"),
    (dict(pop=6, elite=8, variant='latentnb'), "elite must be an integer with 0 <= elite <= pop for the 'latentnb' variant"),
    (dict(pop=6, elite=1), "elite must be an integer with 2 <= elite < pop"),
    (dict(pop=2), "pop must be an integer >= 3 (the 'gift' variant: two distinct parents and at least one child), got 2"),
    (dict(pop=1, variant='latentnb'), 'pop must be an integer >= 2 (crossover needs two parents), got 1'),
    (dict(cx=1.5), 'cx must be a crossover probability in [0, 1], got 1.5'),
    (dict(cx=float('nan')), 'cx must be a crossover probability in [0, 1], got nan'),
    (dict(step='medium'), "step must be 'low', 'high' or a number > 0 (a σ), got 'medium'"),
    (dict(step=0.0), "step must be 'low', 'high' or a number > 0 (a σ), got 0.0"),
    (dict(generations=0), 'generations must be an integer >= 1'),
]

@pytest.mark.parametrize('kw,words', BAD_GIFT, ids=[str(kw) for kw, _ in BAD_GIFT])
def test_giftbench_bad_arguments_fail_before_any_work(toy, kw, words):
    gen, vs, decoded = toy
    clf = Counting(toy_classifier); decoded.clear()
    with pytest.raises(ValueError) as e: giftbench_search(gen, clf, vs['z'], vs['y'], progress=False, **kw)
    assert words in str(e.value) and '\n' not in str(e.value)
    assert clf.asked == [] and decoded == []

def test_giftbench_seeds_and_labels_must_match(toy):
    gen, vs, decoded = toy
    clf = Counting(toy_classifier); decoded.clear()
    with pytest.raises(ValueError, match=r'y must hold one label per latent of z0, shape \(10,\), got shape \(5,\)'):
        giftbench_search(gen, clf, vs['z'], vs['y'][:5], progress=False)
    with pytest.raises(ValueError, match=r'z0 must hold one latent of shape \(2,\) per seed, \(S, 2\), got shape \(10, 1\)'):
        giftbench_search(gen, clf, vs['z'][:, :1], vs['y'], progress=False)
    assert clf.asked == [] and decoded == []

def test_gift_ga_through_run_search_writes_nothing(toy, tmp_path):
    gen, _, decoded = toy
    clf = Counting(toy_classifier); decoded.clear()
    with pytest.raises(ValueError, match='elite must be an integer with 2 <= elite < pop'):
        run_search('gift_ga', gen, GiftObjective(clf), budget_s=5, out_dir=tmp_path/'run', progress=False, pop=25, elite=30)
    assert not (tmp_path/'run').exists() and clf.asked == [] and decoded == []


# --- SINVAD's GA: its settings, before the seeds are encoded or the model asked

class CountingNet(nn.Module):
    "A tiny model under test (2×2 images, 3 classes) that records the size of every batch it is asked"
    def __init__(self):
        super().__init__(); torch.manual_seed(0); self.net, self.asked = nn.Sequential(nn.Flatten(), nn.Linear(4, 3)), []
    def forward(self, x): self.asked.append(len(x)); return self.net(x)

@pytest.fixture
def pix():
    "Pixel space of 2×2 images, a counting model, 6 seed images"
    space = search_space('pixels', shape=(1, 2, 2))
    return space, CountingNet().eval(), torch.rand(6, 1, 2, 2, generator=torch.Generator().manual_seed(0))

def test_sinvad_elite_above_pop_fails_before_any_work(pix):
    space, clf, x = pix
    with pytest.raises(ValueError) as e: ga_search(space, clf, x, pop=8, elite=10)
    assert str(e.value) == ("elite must be an integer with 2 <= elite <= pop (the 'sinvad' GA crosses two distinct parents "
                            "among them), got elite=10, pop=8")
    assert clf.asked == []
    with pytest.raises(ValueError, match=r"elite must be an integer with 0 <= elite <= pop \(the 'latentnb' GA keeps them "
                                         r"unchanged\), got elite=4 \(the default\), pop=3"):
        ga_search(space, clf, x, pop=3, variant='latentnb')
    assert clf.asked == []

BAD_SINVAD = [  # (keyword arguments of ga_search, the words the error must contain)
    (dict(elite=1), 'elite must be an integer with 2 <= elite <= pop'),
    (dict(elite=2.5), 'elite must be an integer with 2 <= elite <= pop'),
    (dict(p_reset=1.5), 'p_reset must be a number in [0, 1] (a probability), got 1.5'),
    (dict(p_reset=-0.1), 'p_reset must be a number in [0, 1] (a probability), got -0.1'),
    (dict(sigma=0), 'sigma must be a number > 0, got 0'),
    (dict(sigma=float('nan')), 'sigma must be a number > 0, got nan'),
    (dict(sigma_init=-0.7), 'sigma_init must be a number >= 0, got -0.7'),
    (dict(min_step=-1e-3), 'min_step must be a number >= 0, got -0.001'),
    (dict(grow=0, variant='latentnb'), 'grow must be a number > 0, got 0'),
    (dict(shrink=-0.9, variant='latentnb'), 'shrink must be a number > 0, got -0.9'),
    (dict(target=torch.tensor([1, 2])), 'target must hold one class per seed image (6), got shape (2,)'),
]

@pytest.mark.parametrize('kw,words', BAD_SINVAD, ids=[str(kw) for kw, _ in BAD_SINVAD])
def test_sinvad_bad_settings_fail_before_any_work(pix, kw, words):
    space, clf, x = pix
    with pytest.raises(ValueError) as e: ga_search(space, clf, x, pop=8, generations=3, **kw)
    assert words in str(e.value) and '\n' not in str(e.value)
    assert clf.asked == []

def test_sinvad_decay_is_checked():
    with pytest.raises(ValueError, match=r'decay must be a number in \(0, 1\], got 1.5'): SinvadGA(decay=1.5)

def test_sinvad_ga_through_run_search_writes_nothing(pix, tmp_path):
    space, clf, x = pix
    p = lambda im: F.softmax(clf(im), 1)
    with pytest.raises(ValueError, match='elite must be an integer with 2 <= elite <= pop'):
        run_search('sinvad_ga', space, Objective('misclassification', p), budget_s=5, out_dir=tmp_path/'run', progress=False,
                   pop=8, elite=10)
    assert not (tmp_path/'run').exists() and clf.asked == []
