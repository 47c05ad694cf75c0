"""Bring your own (latentnb.tools.byo, notebook 91): every bad input stops before any work with one line naming it and the fix;
good inputs of shape 1×28×28, 1×32×32 and 3×32×32 pass; the VAE's training resumes after an interruption to the same weights."""
import copy, dataclasses, os, warnings

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

os.environ.setdefault('LATENTNB_PROFILE', 'ci')
from latentnb.checkpoints import weights_hash
from latentnb.config import load_config
from latentnb.generators import vae as vae_mod
from latentnb.generators.vae import ConvVAE, train_vae
from latentnb.tools.byo import (CHANCE_MARGIN, ImageData, byo_inputs, check_byo_args, check_classifiers, check_labels, read_images,
                                train_generator)

from test_byo import _toy as _toy_images

SHAPES = [(1, 28, 28), (1, 32, 32), (3, 32, 32)]


def _toy(n=30, shape=(1, 28, 28), k=3, seed=0):
    "Bright squares whose position on the diagonal is the class, on a dark background (test_byo's, 30 images of MNIST's shape)"
    return _toy_images(n, shape, k, seed)


class Blocks(nn.Module):
    "Reads the square's position: the mean of each diagonal block, any image shape"
    def __init__(self, k=3, shift=0): super().__init__(); self.k, self.shift = k, shift
    def forward(self, x):
        s = x.shape[-1]//self.k
        out = torch.stack([x[:, :, c*s:(c + 1)*s, c*s:(c + 1)*s].mean((1, 2, 3)) for c in range(self.k)], 1)*10
        return torch.roll(out, self.shift, 1)


class Flat(nn.Module):
    "A linear model of one input shape: fails on any other"
    def __init__(self, shape, k=3): super().__init__(); self.fc = nn.Linear(int(np.prod(shape)), k)
    def forward(self, x): return self.fc(x.flatten(1))


def _script(m, shape, path):
    "`m` written as a TorchScript file traced on `shape`"
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.jit.save(torch.jit.trace(m.eval(), torch.rand(2, *shape)), path)
    return path


def _folder(root, x, y, names=None):
    "Images `x` written as PNGs in class folders `names[y]` (default c0, c1, …)"
    for i, (im, c) in enumerate(zip(x, y.tolist())):
        d = root/(names[c] if names else f'c{c}'); d.mkdir(parents=True, exist_ok=True)
        px = (im*255).round().byte().permute(1, 2, 0).numpy()
        Image.fromarray(px[..., 0] if px.shape[-1] == 1 else px).save(d/f'{i:03d}.png')
    return root


def _stops(fn, *args, match, out=None, exc=ValueError, **kw):
    "`fn(*args)` raises `exc` with one line holding every string of `match`, and writes nothing to `out`"
    with pytest.raises(exc) as e: fn(*args, **kw)
    msg = str(e.value)
    assert '\n' not in msg, msg
    for s in [match] if isinstance(match, str) else match: assert s in msg, (s, msg)
    if out is not None: assert not out.exists(), f"{out} was written"
    return msg


@pytest.fixture
def ckpt(tmp_path, monkeypatch):
    "A checkpoint folder of the test's own: nothing is read from or written to the project's"
    monkeypatch.setenv('LATENTNB_CKPT_DIR', str(tmp_path/'ckpt'))
    monkeypatch.setenv('LATENTNB_FIG_DIR', str(tmp_path/'fig'))
    return tmp_path/'ckpt'


# good inputs

@pytest.mark.parametrize('shape', SHAPES)
def test_good_inputs_pass_every_check(tmp_path, shape, ckpt):
    x, y = _toy(30, shape)
    _folder(tmp_path/'imgs', x, y)
    np.savez(tmp_path/'mine.npz', x=(x*255).round().byte().numpy(), y=y.numpy())
    _script(Blocks(), shape, tmp_path/'a.pt'); _script(Blocks(), shape, tmp_path/'b.pt')
    with warnings.catch_warnings():
        warnings.simplefilter('error', UserWarning)   # no warning either (torch's deprecation notices aside)
        assert check_byo_args(tmp_path/'out', 'cpu') == (tmp_path/'out', 'cpu')
        for images in ('imgs', 'mine.npz'):
            d, a, b = byo_inputs(images, 'a.pt', 'b.pt', cwd=tmp_path)
            assert d.shape == shape and d.n_classes == 3 and len(d) == 30
            acc = check_labels(d, a, b)
            assert min(acc) == 1.0, acc
    assert not (tmp_path/'out').exists() and not ckpt.exists()


# bad images

@pytest.mark.parametrize('bad', ['garbage', 'truncated'])
@pytest.mark.parametrize('first', [True, False])
def test_an_unreadable_image_is_named(tmp_path, bad, first):
    x, y = _toy(6, (1, 28, 28))
    _folder(tmp_path/'imgs', x, y)
    good = (tmp_path/'imgs'/'c0'/'000.png').read_bytes()
    f = tmp_path/'imgs'/'c0'/('-first.png' if first else 'zz.png')   # read first (it sets the shape) or among the others
    f.write_bytes(b'this is not a png' if bad == 'garbage' else good[:60])
    for shape in (None, (1, 28, 28)):
        _stops(read_images, tmp_path/'imgs', shape, out=tmp_path/'out',
               match=[f'{f.name} cannot be read as an image (', '): remove it or replace it', str(f)])


def test_mixed_sizes_and_colours_warn_in_one_line(tmp_path):
    x, y = _toy(6, (1, 28, 28))
    _folder(tmp_path/'imgs', x, y)
    Image.new('RGB', (30, 20), (200, 10, 10)).save(tmp_path/'imgs'/'c1'/'wide.png')   # 30 wide, 20 high, colour
    Image.new('L', (30, 20)).save(tmp_path/'imgs'/'c2'/'wide.png')
    with pytest.warns(UserWarning) as w: d = read_images(tmp_path/'imgs')
    assert d.shape == (1, 28, 28) and len(d) == 8 and len(w) == 1
    msg = str(w[0].message)
    for s in ('its 8 images differ', '6 are 28×28, 2 are 20×30 (H×W)', '7 are grey and 1 colour', 'all are read as 1×28×28',
              'resized, colour made grey', '--shape C,H,W'):
        assert s in msg, (s, msg)
    assert '\n' not in msg
    with pytest.warns(UserWarning, match=r'read as 3×32×32 \(resized, grey copied to RGB\)'): read_images(tmp_path/'imgs', (3, 32, 32))
    (tmp_path/'imgs'/'c1'/'wide.png').unlink()
    with pytest.warns(UserWarning) as w: read_images(tmp_path/'imgs')   # sizes only
    assert 'grey' not in str(w[0].message) and '1 is 20×30' in str(w[0].message)
    (tmp_path/'imgs'/'c2'/'wide.png').unlink(); Image.new('RGB', (28, 28)).save(tmp_path/'imgs'/'c2'/'rgb.png')
    with pytest.warns(UserWarning, match=r'6 are grey and 1 colour; all are read as 1×28×28 \(colour made grey\)'):
        read_images(tmp_path/'imgs')   # colours only
    with warnings.catch_warnings():   # one size, one colour: read as asked, no warning, even at another shape
        warnings.simplefilter('error', UserWarning)
        (tmp_path/'imgs'/'c2'/'rgb.png').unlink()
        assert read_images(tmp_path/'imgs', (3, 32, 32)).shape == (3, 32, 32)


# models

@pytest.mark.parametrize('built, given, fix', [((1, 32, 32), (3, 32, 32), '--shape 1,32,32'),
                                               ((1, 28, 28), (1, 32, 32), '--shape 1,28,28'),
                                               ((3, 32, 32), (1, 28, 28), '--shape 3,32,32')])
def test_a_model_of_another_shape_says_so_in_one_line(tmp_path, built, given, fix):
    x, y = _toy(9, given)
    _folder(tmp_path/'imgs', x, y)
    torch.manual_seed(0); _script(Flat(built), built, tmp_path/'a.pt'); _script(Blocks(), given, tmp_path/'b.pt')
    msg = _stops(byo_inputs, 'imgs', 'a.pt', 'b.pt', cwd=tmp_path, out=tmp_path/'out',
                 match=['model A', f"failed on images of shape (N, {', '.join(map(str, given))})", 'RuntimeError: ', fix])
    assert 'TorchScript' not in msg and 'Traceback' not in msg and len(msg) < 400, msg
    _stops(byo_inputs, 'imgs', 'b.pt', 'a.pt', cwd=tmp_path, match=['model B', fix])


def test_a_model_no_shape_fits_gets_the_general_fix():
    d = ImageData.from_tensors(*_toy(6, (1, 28, 28)), name='toy')
    def picky(x): raise ValueError('I only take\nimages of my own making')
    _stops(check_classifiers, picky, Blocks(), d,
           match=['model A (picky) failed on images of shape (N, 1, 28, 28) of toy: ValueError: I only take;', '--shape C,H,W'])


def test_wrong_class_counts_stay_one_line():
    d = ImageData.from_tensors(*_toy(6, (1, 28, 28)), name='toy')
    _stops(check_classifiers, Blocks(), Blocks(k=4), d, match='answers 4 classes but toy (3 classes')


# labels

WORDS = ('zero', 'one', 'two')


def test_class_folders_out_of_the_models_order_stop_the_run(tmp_path):
    x, y = _toy(30, (1, 28, 28))
    _folder(tmp_path/'imgs', x, y, WORDS)   # sorted: one, two, zero -> labels 0, 1, 2; the models answer zero = 0
    _script(Blocks(), (1, 28, 28), tmp_path/'a.pt')
    d, a, b = byo_inputs('imgs', 'a.pt', 'a.pt', cwd=tmp_path)
    assert d.classes == ('one', 'two', 'zero')
    _stops(check_labels, d, a, b, out=tmp_path/'out',
           match=["both models are at chance on your labelled images (accuracy 0.00, 0.00; chance 1/3 = 0.33): "
                  "are the class folders in the models' label order? folders are read in sorted order: one → 0, two → 1, zero → 2; "
                  "name them 0-…, 1-… in the models' label order or pass an .npz with the models' labels"])


def test_one_model_at_chance_is_a_warning(tmp_path):
    d = ImageData.from_tensors(*_toy(30, (1, 28, 28)), name='toy')
    with pytest.warns(UserWarning) as w: acc = check_labels(d, Blocks(), Blocks(shift=1))   # model B's classes one place off
    assert acc == (1.0, 0.0) and len(w) == 1
    msg = str(w[0].message)
    assert '\n' not in msg
    assert msg.startswith("model B is at chance on your labelled images (accuracy 0.00, model A 1.00; chance 1/3 = 0.33)")
    assert "does it use model A's label order? folders are read in sorted order: 0 → 0, 1 → 1, 2 → 2; name them 0-…" in msg


def test_chance_margin_and_many_classes():
    "At chance: ≤ 1/K + margin·(1 − 1/K); folder names padded to the number of classes"
    k = 12
    x = torch.rand(k*4, 1, 28, 28); y = torch.arange(k*4) % k
    names = [str(i) for i in range(k)]
    d = ImageData.from_tensors(x, y, sorted(names), 'dozen')   # folders 0 … 11 sorted: 0, 1, 10, 11, 2, …
    const = lambda x: np.eye(k, dtype=np.float32)[np.zeros(len(x), int)]   # always class 0: accuracy 1/K
    _stops(check_labels, d, const, const,
           match=['accuracy 0.08, 0.08; chance 1/12 = 0.08', '0 → 0, 1 → 1, 10 → 2, 11 → 3, …', 'name them 00-…, 01-…'])
    assert 1/k + CHANCE_MARGIN*(1 - 1/k) == pytest.approx(0.175)


# the command line's other flags

def test_out_that_is_a_file_is_refused(tmp_path):
    (tmp_path/'notes.txt').write_text('mine')
    _stops(check_byo_args, tmp_path/'notes.txt', match=f"--out {tmp_path/'notes.txt'} is a file: give a folder (created if missing)")
    _stops(check_byo_args, tmp_path/'notes.txt'/'out', match=['is a file, not a folder', 'give a folder (created if missing)'])
    assert (tmp_path/'notes.txt').read_text() == 'mine'
    assert check_byo_args(tmp_path/'a'/'b') == (tmp_path/'a'/'b', None) and not (tmp_path/'a').exists()   # nothing made
    assert check_byo_args() == (None, None) and check_byo_args(None, '') == (None, None)


def test_devices(monkeypatch):
    for dev in ('gpu', 'cuda:x', 'cpu:0', 'tpu'):
        _stops(check_byo_args, None, dev, match=[f'--device {dev}', "accepted: 'cpu', 'cuda' (or 'cuda:N'), 'mps'"])
    assert check_byo_args(None, ' CPU ') == (None, 'cpu')
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    monkeypatch.setattr(torch.cuda, 'device_count', lambda: 0)
    _stops(check_byo_args, None, 'cuda', match='--device cuda: torch sees no CUDA GPU here; use --device cpu or leave it out')
    _stops(check_byo_args, None, 'cuda:1', match='--device cuda:1: torch sees no CUDA GPU here')
    monkeypatch.setattr(torch.backends.mps, 'is_available', lambda: False)
    _stops(check_byo_args, None, 'mps', match='--device mps: torch sees no MPS (Apple GPU) here; use --device cpu or leave it out')
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    monkeypatch.setattr(torch.cuda, 'device_count', lambda: 1)
    assert check_byo_args(None, 'cuda:0') == (None, 'cuda:0')
    _stops(check_byo_args, None, 'cuda:1', match='--device cuda:1: torch sees 1 CUDA GPU here (cuda:0 … cuda:0)')


# the VAE resumes

def _interrupt_after_first_save(monkeypatch):
    "Ctrl-C right after the first epoch's state is written"
    real = vae_mod.torch_save_atomic
    def save_then_stop(obj, path):
        real(obj, path)
        if obj['epoch'] == 1: raise KeyboardInterrupt
    monkeypatch.setattr(vae_mod, 'torch_save_atomic', save_then_stop)


def test_train_vae_resumes_bit_for_bit(tmp_path, monkeypatch):
    x = _toy(40, (1, 16, 16))[0]
    def fresh():
        torch.manual_seed(3); return ConvVAE(4, 8, img_shape=(1, 16, 16))
    whole = fresh(); m_whole = train_vae(whole, x, epochs=3, bs=16, progress=False, seed=2)
    after = torch.rand(3)   # the global generator after an uninterrupted training
    with_file = fresh(); assert train_vae(with_file, x, epochs=3, bs=16, progress=False, seed=2, resume_path=tmp_path/'p.pt') == m_whole
    assert weights_hash(with_file) == weights_hash(whole) and not (tmp_path/'p.pt').exists()   # the file changes nothing
    with monkeypatch.context() as mp:
        _interrupt_after_first_save(mp)
        with pytest.raises(KeyboardInterrupt): train_vae(fresh(), x, epochs=3, bs=16, progress=False, seed=2, resume_path=tmp_path/'p.pt')
    assert torch.load(tmp_path/'p.pt', weights_only=True)['epoch'] == 1
    torch.manual_seed(99)   # whatever ran in between
    v = fresh(); m = train_vae(v, x, epochs=3, bs=16, progress=False, seed=2, resume_path=tmp_path/'p.pt')
    assert m == m_whole and weights_hash(v) == weights_hash(whole) and torch.equal(torch.rand(3), after)
    assert not (tmp_path/'p.pt').exists()
    with monkeypatch.context() as mp:   # a state of another run (other epochs) is not resumed: a warning, then a fresh start
        _interrupt_after_first_save(mp)
        with pytest.raises(KeyboardInterrupt): train_vae(fresh(), x, epochs=5, bs=16, progress=False, seed=2, resume_path=tmp_path/'p.pt')
    with pytest.warns(UserWarning, match='another training run'):
        v = fresh(); train_vae(v, x, epochs=3, bs=16, progress=False, seed=2, resume_path=tmp_path/'p.pt')
    assert weights_hash(v) == weights_hash(whole)


def test_byo_vae_resumes_after_ctrl_c(tmp_path, monkeypatch, ckpt):
    cfg = load_config('ci', seed_all=False)
    cfg = dataclasses.replace(cfg, budgets=copy.deepcopy(cfg.budgets))
    cfg.budgets['byo']['vae_epochs']['ci'] = 2   # two epochs: one to interrupt after, one to resume
    d = ImageData.from_tensors(*_toy(60, (1, 16, 16)), name='squares')
    whole = train_generator(d, 'VAE', cfg)
    ref = weights_hash(whole.model)
    (ckpt/'byo-squares-vae.ci.pt').unlink(); (ckpt/'byo-squares-vae.ci.json').unlink()
    with monkeypatch.context() as mp:
        _interrupt_after_first_save(mp)
        with pytest.raises(KeyboardInterrupt): train_generator(d, 'VAE', cfg)
    partial = list(ckpt.glob('*.partial.pt'))
    assert len(partial) == 1 and torch.load(partial[0], weights_only=True)['epoch'] == 1
    again = train_generator(d, 'VAE', cfg)
    assert weights_hash(again.model) == ref and not partial[0].exists()
