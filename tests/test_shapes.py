"""Every model builds for its dataset's (C, H, W) and runs on it: grey 28×28, colour 32×32 and larger or smaller
squares; a shape outside its rule is refused with a ValueError that names what is accepted (latentnb.data.check_img_shape)."""
import pytest
import torch

from latentnb import argus, gan, giftbench as gb, judges, vae, zoo

CLASSIFIERS = {**{n: getattr(zoo, n) for n in ('ConvNet4', 'ConvNet7', 'LeNet5', 'AlexNetSmall', 'ReferenceCNN', 'SinvadCNN',
                                               'ResNet20', 'InceptionSmall', 'VGG16')},
               'resnet18_cifar': zoo.resnet18_cifar, **{n: getattr(judges, n) for n in ('JudgeResNet', 'WideMLP', 'SepCNN')},
               'DCGAN D': gan.Discriminator, 'GiftDeepConv': gb.GiftDeepConv, 'LeNet4': argus.LeNet4,
               'Argus input D': argus.InputDiscriminator}
AUTOENCODERS = {'MLPVAE': vae.MLPVAE, 'ConvVAE': vae.ConvVAE, 'DeepConvVAE': vae.DeepConvVAE, 'VQVAE': argus.VQVAE, 'ArgusVAE': argus.ArgusVAE}
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
