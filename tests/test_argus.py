"Plain behaviour of latentnb.argus and of its VQ-VAE (latentnb.generators.vqvae): the quantiser, the straight-through gradient, the losses (Eqs. 4, 13, 17), Eq. 11."
import math

import pytest
import torch
import torch.nn.functional as F

from latentnb.generators.vqvae import VectorQuantizer, VQVAE, ArgusVAE
from latentnb.argus import (LatentDiscriminator, InputDiscriminator, interpolate, partner_index, d_loss, g_adv_loss, argus_step,
                            generate, load_argus, load_lenet)


@pytest.fixture
def model():
    torch.manual_seed(0)
    return VQVAE(n_codes=16, code_dim=8, ch=8)


def test_quantised_vectors_are_nearest_codebook_entries():
    torch.manual_seed(1)
    vq = VectorQuantizer(10, 3).eval()
    z = torch.randn(4, 3, 6, 6)
    zq, _, _, idx = vq(z)
    flat = zq.permute(0, 2, 3, 1).reshape(-1, 3)
    assert torch.allclose(flat, vq.codebook.detach()[idx.flatten()], atol=1e-6)
    assert torch.equal(idx.flatten(), torch.cdist(z.permute(0, 2, 3, 1).reshape(-1, 3), vq.codebook.detach()).argmin(1))


def test_straight_through_gradient_reaches_encoder(model):
    x = torch.rand(3, 1, 28, 28)
    model.losses(x)['rec'].backward()
    assert model.enc[0].weight.grad is not None and model.enc[0].weight.grad.abs().sum() > 0
    assert model.vq.codebook.grad is None          # the codebook learns from the codebook loss only


def test_vqvae_loss_is_eq4(model):
    out = model.losses(torch.rand(5, 1, 28, 28))
    for k in ('rec', 'codebook', 'commit', 'total'): assert torch.isfinite(out[k])
    assert torch.allclose(out['total'], out['rec'] + out['codebook'] + model.beta*out['commit'])
    assert torch.allclose(out['codebook'], out['commit'])   # same value, different gradients


def test_vae_ablation_loss():
    v = ArgusVAE(code_dim=4, beta_kl=0.01, ch=8)
    out = v.losses(torch.rand(3, 1, 28, 28))
    assert out['kl'] >= 0 and torch.allclose(out['total'], out['rec'] + 0.01*out['kl'])


def test_adversarial_losses_form():
    l = torch.tensor([-3., 0., 5.])
    assert torch.allclose(g_adv_loss(l), (-F.logsigmoid(l)).mean())
    assert math.isclose(float(d_loss(torch.zeros(4), torch.zeros(4))), 2*math.log(2), rel_tol=1e-6)


def test_joint_step_finite_and_updates_encoder(model):
    x, y = torch.rand(8, 1, 28, 28), torch.arange(8) % 3
    Dz, Dx = LatentDiscriminator(8*49), InputDiscriminator()
    og, od = torch.optim.Adam(model.parameters(), 1e-3), torch.optim.Adam([*Dz.parameters(), *Dx.parameters()], 1e-3)
    w0 = model.enc[0].weight.detach().clone()
    logs = argus_step(model, x, y, 0.2, Dz, Dx, og, od)
    assert all(math.isfinite(v) for v in logs.values())
    assert not torch.equal(w0, model.enc[0].weight.detach())


def test_interpolation_eq11():
    a, b = torch.randn(2, 8, 7, 7), torch.randn(2, 8, 7, 7)
    assert torch.allclose(interpolate(a, b, 0.3), 0.7*a + 0.3*b)
    with pytest.raises(ValueError, match='λ must lie in'): interpolate(a, b, -0.1)
    with pytest.raises(ValueError, match='differ in shape'): interpolate(a, b[:1], 0.1)


def test_partners_are_other_classes():
    y = torch.tensor([0, 1, 1, 2, 0, 2, 2, 1])
    assert (y[partner_index(y)] != y).all()


def test_generate_every_other_class(model):
    xs, ys = torch.rand(4, 1, 28, 28), torch.tensor([0, 1, 2, 3])
    xp, yp = torch.rand(20, 1, 28, 28), torch.arange(20) % 5
    gen = generate(model, xs, ys, xp, yp, lam=0.1, n_partners=2)
    assert gen['x'].shape == (4*4*2, 1, 28, 28)
    assert (gen['other_label'] != gen['label']).all() and 0 <= gen['x'].min() and gen['x'].max() <= 1


def test_clear_errors():
    with pytest.raises(ValueError, match="accepted: argus, -2D, -VQ"): load_argus('mnist', 0.1, 'full')
    with pytest.raises(ValueError, match="accepted: lenet4, lenet5"): load_lenet('mnist', 'lenet1')
    with pytest.raises(ValueError, match=r"shaped \(N, 1, 28, 28\)"): VQVAE().encode(torch.rand(1, 1, 8, 8))


def test_quantising_other_codes_leaves_codebook_statistics(model):
    model.train()
    model.losses(torch.rand(8, 1, 28, 28))                     # initialises from encoder outputs
    u0, c0 = model.vq.usage.clone(), model.vq.codebook.detach().clone()
    model.quantize(50*torch.randn(8, 8, 7, 7))                  # e.g. interpolated codes, training mode
    assert torch.equal(model.vq.usage, u0) and torch.equal(model.vq.codebook.detach(), c0)


def test_step_schedule_decays_lr(model):
    from latentnb.argus import train_argus
    x, y = torch.rand(32, 1, 28, 28), torch.arange(32) % 10
    logs = train_argus(model, x, y, epochs=3, bs=16, adversarial=False, lr=1e-3, lr_step=1, lr_gamma=0.1, progress=False)
    assert math.isclose(logs['lr'], 1e-5, rel_tol=1e-6)
    assert next(model.parameters()).device.type == 'cpu'


def test_partner_draws_per_other_class_and_chunks():
    from latentnb.argus import partner_draws
    ys, yp = torch.tensor([0, 3, 3]), torch.arange(50) % 10
    chunks = list(partner_draws(ys, yp, n_partners=40, seed=0, bs=100))
    assert all(len(s) <= 100 for s, _ in chunks)
    si, pj = torch.cat([s for s, _ in chunks]), torch.cat([p for _, p in chunks])
    assert torch.bincount(si).tolist() == [360]*3
    for i in range(3):
        other = yp[pj[si == i]]
        assert (other != ys[i]).all() and torch.bincount(other, minlength=10)[other.unique()].eq(40).all()


def test_streaming_metrics_match_materialised_and_net_below_raw(model):
    from latentnb.argus import argus_eval, argus_metrics, reconstruct
    from latentnb.zoo import LeNet5
    torch.manual_seed(0)
    xs, ys = torch.rand(12, 1, 28, 28), torch.arange(12) % 10
    xp, yp = torch.rand(60, 1, 28, 28), torch.arange(60) % 10
    clf = LeNet5().eval()
    # a classifier that gets every seed right: answers with the label hidden in the top-left pixel
    class Pix(torch.nn.Module):
        def forward(self, x): return F.one_hot((x[:, 0, 0, 0]*10).round().long().clamp(0, 9), 10).float()
    xs[:, 0, 0, 0] = ys/10
    ev = argus_eval(model, {'pix': Pix(), 'lenet': clf}, xs, ys, xp, yp, lam=0.3, n_partners=4, seed=2, bs=50)
    gen = generate(model, xs, ys, xp, yp, lam=0.3, n_partners=4, seed=2)
    ref = argus_metrics(gen, xs, ys, Pix(), reconstruct(model, xs))
    for k, v in ref.items():
        if v == v: assert math.isclose(ev['metrics']['pix'][k], v, rel_tol=1e-5, abs_tol=1e-6), k
    for r in ev['metrics'].values():
        assert r['error_rate_net'] <= r['error_rate'] and r['success_rate_net'] <= r['success_rate']
        assert r['label_diversity_net'] <= r['label_diversity'] and r['n_inputs'] == r['n_seeds']*36


def test_retraining_selections_are_exact():
    from latentnb.argus import pick_per_class, balanced_holdout
    y = torch.arange(1000) % 10
    pick, rest = balanced_holdout(y, 100, seed=1)
    assert torch.bincount(y[pick]).tolist() == [100]*10 and len(rest) == 0
    with pytest.raises(ValueError, match='needed'): balanced_holdout(y, 101)
    gen = dict(x=torch.rand(300, 1, 28, 28), label=torch.arange(300) % 10)
    xa, ya, frac = pick_per_class(gen, per_class=30, seed=0)
    assert torch.bincount(ya).tolist() == [30]*10 and math.isnan(frac)
    with pytest.raises(ValueError, match='needed'): pick_per_class(gen, per_class=31)


def test_checkpoints_record_the_training_spec(tmp_path, monkeypatch):
    from latentnb.config import load_config
    from latentnb.checkpoints import checkpoint_entry
    from latentnb.argus import load_vqvae
    monkeypatch.setenv('LATENTNB_CKPT_DIR', str(tmp_path))
    cfg = load_config('ci', seed_all=False)
    load_vqvae('mnist', cfg=cfg)
    spec = checkpoint_entry('mnist-argus-vqvae', cfg=cfg)['spec']
    B = cfg.budget('argus')
    assert spec['lr'] == B.lr and spec['epochs'] == B.pre_epochs and spec['lr_gamma'] == B.lr_gamma and spec['code'].startswith('argus-')


def test_grid_of_codes_follows_down():
    "down = 1 gives a 14×14 grid of codes, down = 2 a 7×7 one; both decode back to 28×28; anything else is refused"
    x = torch.rand(3, 1, 28, 28)
    for down, side in ((1, 14), (2, 7)):
        m = VQVAE(n_codes=8, code_dim=4, ch=4, down=down)
        assert m.encode(x).shape == (3, 4, side, side) and m(x).shape == x.shape
        assert ArgusVAE(code_dim=4, ch=4, down=down).encode(x).shape == (3, 4, side, side)
    with pytest.raises(ValueError, match='must be 1'):
        VQVAE(down=0)


def test_white_box_baselines():
    "DLFuzz and DeepXplore give `budget` samples per seed in [0, 1]; DeepXplore's lighting step is uniform; bad input is refused"
    from latentnb.argus import white_box, LeNet4
    from latentnb.zoo import LeNet5
    torch.manual_seed(0)
    x, y = torch.rand(4, 1, 28, 28)*0.5 + 0.25, torch.tensor([0, 1, 2, 3])
    a, b = LeNet4().eval(), LeNet5().eval()
    g = white_box(a, x, y, 'dlfuzz', budget=6, iterations=2)
    assert g['x'].shape == (24, 1, 28, 28) and g['seed_idx'].tolist() == [i for i in range(4) for _ in range(6)]
    assert (g['label'] == y.repeat_interleave(6)).all() and 0 <= g['x'].min() and g['x'].max() <= 1
    d = white_box(a, x, y, 'deepxplore', budget=1, others=[b])['x'] - x
    assert torch.allclose(d.abs(), torch.full_like(d, 10/255), atol=1e-5)          # nothing clipped: one uniform brightness step
    with pytest.raises(ValueError, match='others'):
        white_box(a, x, y, 'deepxplore')
    with pytest.raises(ValueError, match='dlfuzz'):
        white_box(a, x, y, 'pgd')


def test_models_build_for_the_image_shape():
    "img_shape (C, H, W): the default builds the modules as before; 3×32×32 runs end to end; other shapes are refused clearly"
    from latentnb.argus import LeNet4, lenet5, train_argus
    from latentnb.zoo import LeNet5
    torch.manual_seed(0); a = [VQVAE(ch=8), ArgusVAE(ch=8), InputDiscriminator(), LeNet4(), lenet5()]
    torch.manual_seed(0); b = [VQVAE(ch=8, img_shape=(1, 28, 28)), ArgusVAE(ch=8, img_shape=(1, 28, 28)), InputDiscriminator(img_shape=(1, 28, 28)),
                               LeNet4(10, (1, 28, 28)), LeNet5()]
    for m, n in zip(a, b):
        sa, sb = m.state_dict(), n.state_dict()
        assert list(sa) == list(sb) and all(torch.equal(sa[k], sb[k]) for k in sa)
    x, y = torch.rand(16, 3, 32, 32), torch.arange(16) % 4
    for down, side in ((1, 16), (2, 8)):
        m = VQVAE(n_codes=8, code_dim=4, ch=4, down=down, n_res=1, img_shape=(3, 32, 32))
        assert m.encode(x).shape == (16, 4, side, side) and m(x).shape == x.shape
        assert ArgusVAE(code_dim=4, ch=4, down=down, img_shape=(3, 32, 32))(x).shape == x.shape
    logs = train_argus(m, x, y, lam=0.2, epochs=1, bs=8, progress=False)
    assert all(math.isfinite(v) for v in logs.values()) and {'d', 'adv_z', 'adv_x'} <= set(logs)
    assert InputDiscriminator(img_shape=(3, 32, 32))(x).shape == (16,)
    assert LeNet4(img_shape=(3, 32, 32))(x).shape == (16, 10) and lenet5(26, (3, 32, 32))(x).shape == (16, 26)
    with pytest.raises(ValueError, match=r"shaped \(N, 3, 32, 32\)"): m.encode(torch.rand(2, 1, 28, 28))
    with pytest.raises(ValueError, match='multiples of 4'): VQVAE(img_shape=(3, 30, 30))
    with pytest.raises(ValueError, match='multiples of 4'): LeNet4(img_shape=(1, 8, 8))


def test_loaders_take_every_dataset_of_a_supported_shape(tmp_path, monkeypatch):
    "colour-mnist (3×32×32): the loaders train for its shape and record it in the spec; 1×8×8 digits are refused"
    from latentnb.config import load_config
    from latentnb.checkpoints import checkpoint_entry
    from latentnb.argus import load_vqvae, load_lenet, argus_classifiers
    from latentnb.data import load_dataset
    monkeypatch.setenv('LATENTNB_CKPT_DIR', str(tmp_path))
    cfg = load_config('ci', seed_all=False)
    x, _ = load_dataset('colour-mnist', 'test', n=4)
    m = load_vqvae('colour-mnist', cfg=cfg)
    assert m.img_shape == (3, 32, 32) and m(x).shape == x.shape
    assert checkpoint_entry('colour-mnist-argus-vqvae', cfg=cfg)['spec']['img_shape'] == [3, 32, 32]
    load_vqvae('mnist', cfg=cfg)
    assert 'img_shape' not in checkpoint_entry('mnist-argus-vqvae', cfg=cfg)['spec']       # 1×28×28: the spec as before
    assert load_lenet('colour-mnist', 'lenet4', cfg=cfg)(x).shape == (4, 10)
    with pytest.raises(ValueError, match=r"dataset 'digits': image shape \(1, 8, 8\) is not supported"): load_vqvae('digits', cfg=cfg)
    import latentnb.zoo as zoo                           # 3×32×32: the zoo's VGG16 and ResNet18 (built untrained here)
    monkeypatch.setattr(zoo, 'argus_subject', lambda ds, arch, cfg=None: zoo.ARGUS_SUBJECTS[arch].build((3, 32, 32), 10).eval())
    clfs = argus_classifiers('colour-mnist', cfg)
    assert list(clfs) == ['VGG16', 'ResNet18'] and all(c(x).shape == (4, 10) for c in clfs.values())


def test_white_box_and_metrics_on_colour_images():
    "DLFuzz, ADAPT and DiffChaser take colour seeds; the metrics count labels beyond 10 classes (EMNIST letters: 26)"
    from latentnb.argus import white_box, lenet5, argus_metrics
    from latentnb.argus.baselines import adapt, diffchaser
    torch.manual_seed(0)
    x, y = torch.rand(3, 3, 32, 32), torch.tensor([0, 1, 2])
    c = lenet5(10, (3, 32, 32)).eval()
    for g in (white_box(c, x, y, 'dlfuzz', budget=4), adapt(c, x, y, budget=4), diffchaser(c, x, y, budget=4)):
        assert g['x'].shape == (12, 3, 32, 32) and 0 <= g['x'].min() and g['x'].max() <= 1
    class Const(torch.nn.Module):                       # right on seed 0 (label 0), answers letter 25 elsewhere
        def forward(self, x): return F.one_hot(torch.where(x[:, 0, 0, 0] < 0.5, 0, 25), 26).float()
    x[0, 0, 0, 0], x[1:, 0, 0, 0] = 0.0, 1.0
    gen = dict(x=x[[0, 0]].clone(), seed_idx=torch.tensor([0, 0]), label=torch.tensor([0, 0]))
    gen['x'][1, 0, 0, 0] = 1.0
    r = argus_metrics(gen, x, y, Const())
    assert r['n_seeds'] == 1 and r['error_rate'] == 0.5 and r['label_diversity'] == 1.0
