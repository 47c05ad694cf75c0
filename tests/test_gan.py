"Plain behaviour of latentnb.gan: the Generator/Discriminator contract, training loop, FID/KID wrapper (no dataset)"
import pytest, torch
from latentnb.gan import Generator, Discriminator, sample_z, train_gan, generate, init_dcgan, FeatureExtractor, fid_kid
from latentnb.zoo import ReferenceCNN

def test_contract():
    G, D = Generator().eval(), Discriminator().eval()
    assert G.nz == 100 and G.z_bounds == (-1.0, 1.0)
    z = sample_z(5)
    assert z.shape == (5, 100) and z.min() >= -1 and z.max() <= 1
    x = G(z)
    assert x.shape == (5, 1, 28, 28) and x.min() >= 0 and x.max() <= 1
    assert D(x).shape == (5,)

def test_train_logs_every_step_and_is_deterministic():
    x = torch.rand(96, 1, 28, 28)
    outs = []
    for _ in range(2):
        torch.manual_seed(0); G, D = init_dcgan(Generator(ngf=8)), init_dcgan(Discriminator(ndf=8))
        h = train_gan(G, D, x, epochs=2, bs=32, progress=False, seed=1)
        assert set(h) == {'d_loss', 'g_loss', 'd_real', 'd_fake'} and len(h['g_loss']) == 6
        outs.append(generate(G, 4, seed=2))
    assert torch.equal(outs[0], outs[1])
    with pytest.raises(ValueError, match='fewer than one batch'): train_gan(G, D, x[:5], bs=32, progress=False)

def test_fid_kid_custom_features():
    feat = FeatureExtractor(ReferenceCNN().eval())
    a, b = torch.rand(120, 1, 28, 28), torch.rand(120, 1, 28, 28)
    s = fid_kid(feat, a, b, subset_size=50, kid_subsets=3)
    assert set(s) == {'fid', 'kid', 'kid_std'} and s['fid'] >= 0
