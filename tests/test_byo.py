"Bring your own models (notebook 91, latentnb.tools.byo): clear errors for bad images, labels, folders and classifiers; a tiny end to end whose rerun reopens the generator and the search."
import os

import numpy as np
import pytest
import torch
from PIL import Image

os.environ.setdefault('LATENTNB_PROFILE', 'ci')
from latentnb.blackbox import BlackBoxError
from latentnb.tools.byo import (ImageData, byo_filter, byo_report, byo_search, check_classifiers, train_generator)
from latentnb.checkpoints import weights_hash
from latentnb.config import load_config
from latentnb.zoo import ModelSpec


def _toy(n=120, shape=(3, 16, 16), k=3, seed=0):
    "Bright squares whose position is the class, on a dark background"
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % k
    x = 0.1*torch.rand(n, *shape, generator=g)
    s = shape[1]//k
    for i, c in enumerate(y.tolist()): x[i, :, c*s:(c + 1)*s, c*s:(c + 1)*s] = 0.9
    return x, y


def _clf(k=3):
    "A classifier that reads the square's position: the mean brightness of each diagonal block"
    def f(x):
        s = x.shape[-1]//k
        return np.stack([x[:, :, c*s:(c + 1)*s, c*s:(c + 1)*s].mean((1, 2, 3)) for c in range(k)], 1)*10
    return f


@pytest.mark.parametrize('x, msg', [
    (torch.rand(3, 16, 16), 'add a batch axis'),
    (torch.rand(4, 16, 16, 3), 'channels-last'),
    (torch.rand(4, 3, 16, 16)*255, 'divide by 255'),
    (torch.rand(4, 3, 16, 16)*2 - 1, 'undo the normalisation'),
    (torch.rand(4, 3, 16, 12), 'not supported'),
    (torch.full((4, 3, 16, 16), float('nan')), 'NaN'),
])
def test_bad_images_say_what_is_accepted(x, msg):
    with pytest.raises(ValueError, match=msg) as e: ImageData.from_tensors(x, [0, 1, 0, 1][:len(x)])
    assert '(N, C, H, W)' in str(e.value) or 'accepted' in str(e.value) or '[0, 1]' in str(e.value)


@pytest.mark.parametrize('y, classes, msg', [
    ([0, 1, 0], None, r'shape \(4,\)'),
    (np.eye(4, 2), None, 'argmax'),
    ([0., 1., 0., 1.], None, 'integers'),
    ([0, 1, 2, 3], ['a', 'b'], r'outside 0\.\.1'),
    ([0, 0, 0, 0], None, 'at least 2'),
])
def test_bad_labels_say_what_is_accepted(y, classes, msg):
    with pytest.raises(ValueError, match=msg): ImageData.from_tensors(torch.rand(4, 3, 16, 16), y, classes)


def test_uint8_images_are_scaled_and_names_checked():
    d = ImageData.from_tensors(torch.full((2, 1, 16, 16), 255, dtype=torch.uint8), [0, 1])
    assert d.x.dtype == torch.float32 and float(d.x.max()) == 1.0 and d.classes == ('0', '1')
    with pytest.raises(ValueError, match='letters, digits'): ImageData(d.x, d.y, name='a b/c')


def test_image_folder_round_trip_and_errors(tmp_path):
    x, y = _toy(6)
    for i, (im, c) in enumerate(zip(x, y)):
        (tmp_path/'imgs'/f'c{c}').mkdir(parents=True, exist_ok=True)
        Image.fromarray((im*255).round().byte().permute(1, 2, 0).numpy()).save(tmp_path/'imgs'/f'c{c}'/f'{i:03d}.png')
    d = ImageData.from_folder(tmp_path/'imgs', (3, 16, 16))
    order = torch.argsort(y, stable=True)
    assert d.classes == ('c0', 'c1', 'c2') and d.name == 'imgs'
    assert torch.equal(d.y, y[order]) and torch.allclose(d.x, (x[order]*255).round()/255)
    assert ImageData.from_folder(tmp_path/'imgs', (1, 32, 32)).shape == (1, 32, 32)
    with pytest.raises(FileNotFoundError, match='one sub-folder per class'): ImageData.from_folder(tmp_path/'none', (3, 16, 16))
    with pytest.raises(FileNotFoundError, match='one sub-folder per class'): ImageData.from_folder(tmp_path/'imgs'/'c0', (3, 16, 16))
    with pytest.raises(ValueError, match='RGB'): ImageData.from_folder(tmp_path/'imgs', (2, 16, 16))


def test_classifiers_of_the_wrong_classes_or_shape_are_named():
    x, y = _toy(12)
    d = ImageData.from_tensors(x, y, name='toy')
    a, b = check_classifiers(_clf(), _clf(), d)
    assert a(x[:4]).shape == (4, 3)
    with pytest.raises(BlackBoxError, match=r'model B .* answers 5 classes but toy \(3 classes'):
        check_classifiers(_clf(), lambda x: np.zeros((len(x), 5), np.float32), d)
    with pytest.raises(BlackBoxError, match=r'model A .*\(N, 3, 16, 16\)'):
        check_classifiers(ModelSpec('LeNet5').build(), _clf(), d)   # built for 1×28×28


def test_tiny_end_to_end_reopens_on_rerun(tmp_path, monkeypatch):
    monkeypatch.setenv('LATENTNB_CKPT_DIR', str(tmp_path/'ckpt'))
    monkeypatch.setenv('LATENTNB_FIG_DIR', str(tmp_path/'fig'))
    cfg = load_config('ci', seed_all=False)
    x, y = _toy(120)
    d = ImageData.from_tensors(x, y, ['left', 'middle', 'right'], 'squares')
    gen = train_generator(d, 'vae', cfg)
    assert gen.kind == 'vae' and gen.D is None and len(gen.train) + len(gen.heldout) == len(d)
    assert (cfg.ckpt_dir/'byo-squares-vae.ci.pt').exists()
    again = train_generator(d, 'vae', cfg)
    assert weights_hash(again.model) == weights_hash(gen.model)                         # reopened, not retrained
    other = train_generator(ImageData.from_tensors(*_toy(120, seed=1), name='squares'), 'vae', cfg)
    assert weights_hash(other.model) != weights_hash(gen.model)                         # other images: retrained
    gen = train_generator(d, 'vae', cfg)
    flip = lambda x: _clf()(x)[:, ::-1].copy()                                          # model B swaps left and right
    res = byo_search(gen, _clf(), flip, max_evals=60, budget_s=60, seed=0, out_dir=tmp_path/'run', cfg=cfg)
    assert 60 <= res.n_evals < 60 + cfg.budget('byo').pop_size and res.unique > 0
    rerun = byo_search(gen, _clf(), flip, max_evals=60, budget_s=60, seed=0, out_dir=tmp_path/'run', cfg=cfg)
    assert (rerun.n_evals, rerun.unique) == (res.n_evals, res.unique)
    flt = byo_filter(gen, cfg)
    assert flt.tau_D is None and flt.keep(gen.heldout.x).mean() >= 0.9 - 1e-9
    rep = byo_report({'DiffGAN': res}, flt, d.classes, max_judged=0, cfg=cfg)
    row = rep.table.loc['DiffGAN']
    assert row.triggering == res.unique and row.judged == res.unique and row.valid == row.valid_judged <= res.unique
    assert set(rep.pairs.columns) == {'run', 'label_a', 'label_b', 'valid_judged'}
    assert set(rep.pairs.label_a) <= set(d.classes) and rep.figure is not None
    with pytest.raises(ValueError, match='makes images'):
        byo_search(gen, _clf(), flip, data=ImageData.from_tensors(torch.rand(4, 1, 16, 16), [0, 1, 2, 0]), cfg=cfg)


@pytest.mark.parametrize('kw, msg', [(dict(max_evals=0), 'max_evals must be an integer >= 1'),
                                     (dict(budget_s=-5), 'budget_s must be a number of seconds > 0'),
                                     (dict(budget_s=float('nan')), 'budget_s must be a number of seconds > 0')])
def test_byo_search_refuses_a_bad_budget_before_any_work(kw, msg):
    "The budget is checked first: no generator or model is touched (here: none is even usable)"
    with pytest.raises(ValueError, match=msg): byo_search(object(), None, None, cfg=load_config('ci', seed_all=False), **kw)
