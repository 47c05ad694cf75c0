"Plain behaviour of latentnb.generators: each adapter decodes what its model decodes, as_generator dispatch, clear errors."
import pytest, torch, torch.nn as nn
from latentnb.generators import (GENERATOR_KINDS, LatentGenerator, as_generator, gan_generator, cgan_generator, ddim_generator,
                                 generator_kind, vae_generator, vqvae_generator)
from latentnb.generators.gan import Generator
from latentnb.generators.conditional import CondGenerator, CGAN, build_unet
from latentnb.generators.vae import MLPVAE, ConvVAE
from latentnb.generators.vqvae import VQVAE

def test_adapters_decode_what_the_models_decode():
    torch.manual_seed(0)
    x = torch.rand(3, 1, 28, 28)
    G = Generator(ngf=8); g = as_generator(G)
    z = g.sample(3, torch.Generator().manual_seed(0))
    assert g.name == 'GAN (Generator)' and g.bounds == (-1.0, 1.0) and z.abs().max() <= 1
    assert torch.equal(g.decode(z), G(z))
    C = CondGenerator(ngf=8); c = as_generator(CGAN(width=8))
    assert c.conditional and c.latent_shape == (100,)
    c = as_generator(C); z = c.sample(3); y = torch.tensor([0, 5, 9])
    assert torch.equal(c.decode(z, y), C(z, y))
    for V in (MLPVAE(8, 32), ConvVAE(4, 8)):
        v = as_generator(V)
        assert v.can_encode and v.prior == 'normal' and torch.equal(v.decode(v.encode(x)), V.reconstruct(x))
    M = VQVAE(16, 4, ch=8); q = as_generator(M)
    assert not q.can_sample and torch.equal(q.decode(q.encode(x)), M(x)) and q.latent_shape == (4, 7, 7)

def test_ddim_is_deterministic_and_conditional():
    d = as_generator(build_unet((8, 16, 16)), 'DDIM', ddim_steps=2)
    z, y = d.candidates(torch.arange(2), torch.Generator().manual_seed(0)), torch.arange(2)
    assert d.latent_shape == (1, 28, 28) and d.info == {'ddim_steps': 2} and z.abs().max() <= 3
    assert torch.equal(d.decode(z, y), d.decode(z, y))
    with pytest.raises(ValueError, match='class-conditional'): d.decode(z)

def test_clear_errors():
    g = gan_generator(Generator(ngf=8))
    with pytest.raises(ValueError, match=r'latents must have shape \(N, 100\), got \(2, 10\)'): g.decode(torch.zeros(2, 10))
    with pytest.raises(ValueError, match='has no encoder'): g.encode(torch.zeros(1, 1, 28, 28))
    c = cgan_generator(CondGenerator(ngf=8))
    with pytest.raises(ValueError, match='labels must be in 0..9'): c.decode(torch.zeros(1, 100), torch.tensor([10]))
    with pytest.raises(TypeError, match='accepted: a conditional GAN.*a VQ-VAE.*a VAE.*a DCGAN'): as_generator(nn.Linear(2, 2))
    with pytest.raises(ValueError, match='cannot sample'): vqvae_generator(VQVAE(16, 4, ch=8)).sample(1)

def test_seed_images_are_encoded_per_label_and_clamped():
    x, y = torch.rand(20, 1, 28, 28), torch.arange(20) % 10
    v = vae_generator(MLPVAE(8, 32), 'VAE', (-0.1, 0.1), seed_images=(x, y))
    z = v.candidates(torch.tensor([1, 2]), torch.Generator().manual_seed(0))
    assert z.shape == (2, 8) and z.abs().max() <= 0.1
    with pytest.raises(ValueError, match='no seed image of label 11'): v.candidates(torch.tensor([11]), torch.Generator())


def test_one_name_per_generator_kind():
    "The kinds are spelled once (GENERATOR_KINDS); a user's kind in any case comes back in that spelling, anything else is refused by name"
    assert GENERATOR_KINDS == ('GAN', 'VAE', 'VQ-VAE', 'cGAN', 'DDIM')
    assert [generator_kind(k.lower()) for k in GENERATOR_KINDS] == list(GENERATOR_KINDS)
    assert generator_kind('cgan', ('VAE', 'cGAN', 'DDIM'), 'generator') == 'cGAN'
    with pytest.raises(ValueError, match=r"generator='ddpm' is not a generator kind accepted here; accepted: VAE, cGAN, DDIM \(any case\)$"):
        generator_kind('ddpm', ('VAE', 'cGAN', 'DDIM'), 'generator')
    with pytest.raises(ValueError, match='are not spelled as latentnb.generators.GENERATOR_KINDS'): generator_kind('gan', ('gan',))
