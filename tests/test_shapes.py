"""Every model builds for its dataset's (C, H, W) and runs on it: grey 28×28, colour 32×32 and larger or smaller
squares; a shape outside its rule is refused with a ValueError that names what is accepted (latentnb.data.check_img_shape)."""
import pytest
import torch

from latentnb import argus, judges, zoo
from latentnb import giftbench
from latentnb.generators import conditional as gb
from latentnb.generators import gan
from latentnb.generators import vae, vqvae

CLASSIFIERS = {**{n: getattr(zoo, n) for n in ('ConvNet4', 'ConvNet7', 'LeNet5', 'AlexNetSmall', 'ReferenceCNN', 'SinvadCNN',
                                               'ResNet20', 'InceptionSmall', 'VGG16')},
               'resnet18_cifar': zoo.resnet18_cifar, **{n: getattr(judges, n) for n in ('JudgeResNet', 'WideMLP', 'SepCNN')},
               'DCGAN D': gan.Discriminator, 'GiftDeepConv': giftbench.GiftDeepConv, 'LeNet4': argus.LeNet4,
               'Argus input D': argus.InputDiscriminator}
AUTOENCODERS = {'MLPVAE': vae.MLPVAE, 'ConvVAE': vae.ConvVAE, 'DeepConvVAE': vae.DeepConvVAE, 'VQVAE': vqvae.VQVAE, 'ArgusVAE': vqvae.ArgusVAE}
GENERATORS = {'DCGAN G': gan.Generator, 'cGAN': gb.CGAN, 'UNet': lambda img_shape: gb.build_unet(img_shape=img_shape)}
SHAPES = [(1, 28, 28), (3, 32, 32), (1, 16, 16), (3, 64, 64)]


@pytest.mark.parametrize('name', list(CLASSIFIERS) + list(AUTOENCODERS))
@pytest.mark.parametrize('shape', SHAPES)
def test_builds_and_runs(name, shape):
    m = {**CLASSIFIERS, **AUTOENCODERS}[name](img_shape=shape).eval()
    with torch.no_grad(): out = m(torch.rand(2, *shape))
    out = out[0] if isinstance(out, tuple) else out
    assert out.shape[0] == 2 and torch.isfinite(out).all()
    if name in AUTOENCODERS and out.ndim == 4: assert tuple(out.shape[1:]) == shape   # a reconstruction of the input's shape


@pytest.mark.parametrize('name', list(GENERATORS))
@pytest.mark.parametrize('shape', SHAPES)
def test_generators_build(name, shape):
    m = GENERATORS[name](img_shape=shape)
    assert sum(p.numel() for p in m.parameters()) > 0


@pytest.mark.parametrize('name', list(CLASSIFIERS) + list(AUTOENCODERS) + list(GENERATORS))
def test_refused_shape_names_what_is_accepted(name):
    bad = (3, 32) if name == 'MLPVAE' else (3, 30, 31)   # the MLP VAE takes any (C, H, W); the others halve or pool H and W
    with pytest.raises(ValueError, match=r'\(C, H, W\)'):
        {**CLASSIFIERS, **AUTOENCODERS, **GENERATORS}[name](img_shape=bad)


def test_one_default_shape_and_one_spec_rule():
    """One default shape (latentnb.data.DEFAULT_SHAPE) and one rule for what a checkpoint's spec records of the images
    (latentnb.data.shape_spec): the shape only off the default, the classes only off 10, in every family's spec"""
    from latentnb.config import load_config
    from latentnb.data import DATASETS, DEFAULT_SHAPE, shape_spec
    cfg = load_config('ci', seed_all=False)
    assert gan.GAN_SHAPE == DEFAULT_SHAPE and gan.Generator().img_shape == DEFAULT_SHAPE
    assert all(m().img_shape == DEFAULT_SHAPE for m in (zoo.LeNet5, judges.SepCNN, vae.ConvVAE, vqvae.VQVAE, giftbench.GiftDeepConv))
    pick = lambda spec, keys=('img_shape', 'n_classes'): {k: v for k, v in spec.items() if k in keys}
    for d, i in DATASETS.items():
        assert pick(zoo.zoo_spec(zoo.REFERENCE, d, cfg)) == shape_spec(i.shape, i.n_classes)
        assert pick(vae.vae_spec(d, 'mlp', 8, cfg)) == pick(gan.gan_spec(d, cfg=cfg)) == shape_spec(i.shape)
        if d in gb.DATASETS: assert pick(gb.cgan_spec(d, cfg)) == pick(gb.ddpm_spec(d, cfg)) == shape_spec(i.shape, i.n_classes)
    assert shape_spec(DEFAULT_SHAPE, 10) == {} and shape_spec((3, 32, 32), 26) == {'img_shape': [3, 32, 32], 'n_classes': 26}
