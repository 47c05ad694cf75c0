"Plain behaviour of latentnb.argus: the quantiser, the straight-through gradient, the losses (Eqs. 4, 13, 17), Eq. 11."
import math

import pytest
import torch
import torch.nn.functional as F

from latentnb.argus import (VectorQuantizer, VQVAE, ArgusVAE, LatentDiscriminator, InputDiscriminator, interpolate,
                            partner_index, d_loss, g_adv_loss, argus_step, generate, load_argus, load_lenet)


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
