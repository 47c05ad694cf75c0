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
    assert gen.kind == 'VAE' and gen.D is None and len(gen.train) + len(gen.heldout) == len(d)
    assert (cfg.ckpt_dir/'byo-squares-vae.ci.pt').exists() and gen.spec['kind'] == 'vae'   # the checkpoint keeps its name
    again = train_generator(d, 'VAE', cfg)                                              # any case: the same kind
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
    from latentnb.tools.byo import export_failures, byo_results
    t = export_failures({'DiffGAN': res}, rep.verdicts, tmp_path/'out', d.classes)
    assert len(t) == row.judged and t.valid.sum() == row.valid_judged and (t.label_a != t.label_b).all()
    assert all((tmp_path/'out'/f).exists() for f in t.file) and (tmp_path/'out'/'failures.csv').exists()
    assert all(('rejected' in f) != v for f, v in zip(t.file, t.valid))
    r = byo_results(tmp_path/'out', rep.table, rep.pairs, generator=gen.kind)
    import json
    got = json.loads(r.read_text())
    assert got['generator'] == 'VAE' and got['runs'][0]['triggering'] == res.unique and len(got['valid_pairs']) == len(rep.pairs)


@pytest.mark.parametrize('kw, msg', [(dict(max_evals=0), 'max_evals must be an integer >= 1'),
                                     (dict(budget_s=-5), 'budget_s must be a number of seconds > 0'),
                                     (dict(budget_s=float('nan')), 'budget_s must be a number of seconds > 0')])
def test_byo_search_refuses_a_bad_budget_before_any_work(kw, msg):
    "The budget is checked first: no generator or model is touched (here: none is even usable)"
    with pytest.raises(ValueError, match=msg): byo_search(object(), None, None, cfg=load_config('ci', seed_all=False), **kw)


def test_read_images_from_a_folder_or_an_npz_and_its_errors(tmp_path):
    from latentnb.tools.byo import read_images
    x, y = _toy(9)
    for i, (im, c) in enumerate(zip(x, y)):
        (tmp_path/'imgs'/f'k{c}').mkdir(parents=True, exist_ok=True)
        Image.fromarray((im*255).round().byte().permute(1, 2, 0).numpy()).save(tmp_path/'imgs'/f'k{c}'/f'{i:03d}.png')
    d = read_images(tmp_path/'imgs')                                   # the first image's size, RGB
    assert (d.shape, d.classes, d.name, len(d)) == ((3, 16, 16), ('k0', 'k1', 'k2'), 'imgs', 9)
    np.savez(tmp_path/'mine.npz', x=(d.x*255).round().byte().numpy(), y=d.y.numpy(), classes=np.array(['a', 'b', 'c']))
    n = read_images(tmp_path/'mine.npz')
    assert torch.equal(n.x, d.x) and n.classes == ('a', 'b', 'c') and n.name == 'mine'
    np.savez(tmp_path/'nolabels.npz', images=d.x.numpy())
    (tmp_path/'empty').mkdir(); (tmp_path/'flat').mkdir(); Image.new('L', (16, 16)).save(tmp_path/'flat'/'a.png')
    (tmp_path/'big').mkdir(); (tmp_path/'big'/'a').mkdir(); (tmp_path/'big'/'b').mkdir()
    for c in 'ab': Image.new('RGB', (30, 30)).save(tmp_path/'big'/c/'0.png')
    for args, exc, msg in [((tmp_path/'empty',), ValueError, 'is empty'), ((tmp_path/'flat',), ValueError, 'no sub-folders'),
                           ((tmp_path/'nowhere',), FileNotFoundError, 'No folder or .npz'),
                           ((tmp_path/'nolabels.npz',), ValueError, 'not x and y'),
                           ((tmp_path/'mine.npz', (3, 32, 32)), ValueError, r'not the \(3, 32, 32\)'),
                           ((tmp_path/'big',), ValueError, r'30×30 .*shape=\(3, 32, 32\)')]:
        with pytest.raises(exc, match=msg): read_images(*args)
    assert read_images(tmp_path/'big', (1, 32, 32)).shape == (1, 32, 32)


def test_load_model_from_what_a_user_types(tmp_path):
    from latentnb.tools.byo import load_model
    m = ModelSpec('LeNet5').build((3, 16, 16), 3).eval()
    torch.jit.save(torch.jit.trace(m, torch.rand(2, 3, 16, 16)), tmp_path/'m.pt')
    (tmp_path/'bad.pt').write_text('no')
    (tmp_path/'zoo_of_mine.py').write_text("import numpy as np\ndef f(x): return np.ones((len(x), 3), np.float32)\n"
                                           "def make(): return f\nclass C: pass\nvalue = 3\n")
    assert load_model(tmp_path/'m.pt')(torch.rand(2, 3, 16, 16)).shape == (2, 3)
    assert load_model('m.pt', cwd=tmp_path)(torch.rand(1, 3, 16, 16)).shape == (1, 3)                # relative to cwd
    assert load_model('zoo_of_mine:f', cwd=tmp_path)(np.zeros((4, 3, 16, 16))).shape == (4, 3)
    assert load_model(f'{tmp_path}/zoo_of_mine.py:make')(np.zeros((2, 1))).shape == (2, 3)           # a factory is called
    assert load_model(m) is m                                                                        # a model passes through
    for spec, msg in [('bad.pt', 'could not be loaded as a TorchScript'), ('gone.pt', "is not 'module:name'"),
                      ('zoo_of_mine:g', "has no 'g'"), ('zoo_of_mine:C', 'is a class'), ('zoo_of_mine:value', 'not a model'),
                      ('not_a_module_anywhere:f', 'importing')]:
        with pytest.raises((ValueError, FileNotFoundError), match=msg): load_model(spec, 'model B', tmp_path)


def test_generator_kinds_pick_and_why_none():
    import pandas as pd
    from latentnb.tools.byo import as_kinds, pick_generator, why_none
    assert as_kinds(None) == as_kinds('both') == as_kinds('BOTH') == as_kinds('vae, gan') == ('GAN', 'VAE') and as_kinds(['Vae']) == ('VAE',)
    with pytest.raises(ValueError, match=r"generators='diffusion' is not a generator kind accepted here; accepted: GAN, VAE \(any case\), "
                                         r"'both' or a comma-separated list"): as_kinds('diffusion')
    with pytest.raises(ValueError, match="generators='' is not"): as_kinds([])
    row = lambda v, t=100: dict(evaluations=300, triggering=t, judged=min(t, 50), valid_judged=v, valid=2.0*v, valid_share=v/50,
                                disc_ok_share=0.1, ssim_ok_share=0.2)
    T = pd.DataFrame({'DiffGAN (GAN)': row(0), 'random (GAN)': row(0), 'DiffGAN (VAE)': row(7), 'random (VAE)': row(9)}).T
    assert pick_generator(T, ('GAN', 'VAE')) == 'VAE' == pick_generator(T)
    cfg = load_config('ci', seed_all=False)
    assert why_none(T.loc['DiffGAN (VAE)'], 'VAE', cfg) is None
    w = why_none(T.loc['DiffGAN (GAN)'], 'gan', cfg)                                   # any case
    assert 'discriminator stage passed 10%' in w and 'SSIM stage 20%' in w and 'gan_epochs' in w and 'take the VAE' in w
    assert 'no triggering input' in why_none(pd.Series(row(0, t=0)), 'VAE', cfg)
