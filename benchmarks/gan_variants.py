#!/usr/bin/env python
"""Mean confidence of generated MNIST digits against training steps, for variants of the project's DCGAN.

Why: issue 3 asks the `quick` MNIST GAN for a mean max-softmax confidence >= 0.9 under the reference classifier.
This script trains one variant on the GAN's training set (MNIST test split + 5 augmentations, 17,994 images)
and prints, after every epoch, the mean confidence and the smallest class share of 2,000 samples (seed 5), for
the generator itself ("raw") and for an exponential moving average of its weights ("ema", decay 0.999).
Not a timed test: run it by hand, one variant per process (one torch thread each), e.g.

    LATENTNB_PROFILE=quick python benchmarks/gan_variants.py dcgan 30
    LATENTNB_PROFILE=quick python benchmarks/gan_variants.py dcgan,bs32 15
    LATENTNB_PROFILE=quick python benchmarks/gan_variants.py deep 20

Options (comma-separated): `bs32` (batch 32 instead of 64), `ttur` (lr_G 1e-4, lr_D 4e-4), `deep` (an extra
3×3 conv at 7×7 and 14×14 in G), `big` (256 channels at 7×7, 128 at 7×7 after a 5×5 transposed conv), `d64`
(D with 64 channels), `d3` (a third strided conv in D), `mlp` (with d3: a 256-unit hidden layer in D's head), `sn` (spectral-norm D with three convs), `hinge` (hinge loss), `daug` (DiffAugment-style
translation ±3 px + a 14×14 cutout on both real and generated images seen by D), `noaug` (the 2,999 original
test images repeated 6× instead of the augmentations), `decay` (learning rates decayed linearly to 0 over the
second half). Results measured for issue 3 are in benchmarks/RESULTS.md.
"""
import copy, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

from latentnb.config import load_config
from latentnb.generators.gan import Generator, Discriminator, gan_training_set, generate, init_dcgan, sample_z
from latentnb.zoo import reference_classifier
from latentnb.blackbox import predict_proba


class DeepG(Generator):
    "The project's generator with one extra 3×3 conv (BN, ReLU) at 7×7 and at 14×14"
    def __init__(self, nz=100, ngf=32):
        super().__init__(nz, ngf)
        self.up = nn.Sequential(nn.Conv2d(2*ngf, 2*ngf, 3, 1, 1, bias=False), nn.BatchNorm2d(2*ngf), nn.ReLU(True),
                                nn.ConvTranspose2d(2*ngf, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
                                nn.Conv2d(ngf, ngf, 3, 1, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
                                nn.ConvTranspose2d(ngf, 1, 4, 2, 1), nn.Tanh())

class BigG(Generator):
    "A wider generator (256 channels at 7×7, a 5×5 transposed conv to 128, then 64 at 14×14)"
    def __init__(self, nz=100):
        super().__init__(nz, 128)
        self.project = nn.Sequential(nn.Linear(nz, 256*49, bias=False), nn.BatchNorm1d(256*49), nn.ReLU(True))
        self.up = nn.Sequential(nn.ConvTranspose2d(256, 128, 5, 1, 2, bias=False), nn.BatchNorm2d(128), nn.ReLU(True),
                                nn.ConvTranspose2d(128, 64, 4, 2, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(True),
                                nn.ConvTranspose2d(64, 1, 4, 2, 1), nn.Tanh())

class SND(nn.Module):
    "A spectral-norm discriminator with three convs (no batch norm)"
    def __init__(self, ndf=64):
        super().__init__(); sn = nn.utils.spectral_norm
        self.net = nn.Sequential(sn(nn.Conv2d(1, ndf, 4, 2, 1)), nn.LeakyReLU(0.2, True), sn(nn.Conv2d(ndf, 2*ndf, 4, 2, 1)),
                                 nn.LeakyReLU(0.2, True), sn(nn.Conv2d(2*ndf, 2*ndf, 3, 1, 1)), nn.LeakyReLU(0.2, True),
                                 nn.Flatten(), sn(nn.Linear(2*ndf*49, 1)))
    def forward(self, x): return self.net(x*2 - 1).squeeze(1)

class D3(nn.Module):
    "The project's discriminator with a third strided conv (128 channels at 4×4): a receptive field of the whole digit"
    def __init__(self, ndf=32, mlp=False):
        super().__init__()
        head = [nn.Linear(4*ndf*16, 256), nn.LeakyReLU(0.2, True), nn.Linear(256, 1)] if mlp else [nn.Linear(4*ndf*16, 1)]
        self.net = nn.Sequential(nn.Conv2d(1, ndf, 4, 2, 1), nn.LeakyReLU(0.2, True),
                                 nn.Conv2d(ndf, 2*ndf, 4, 2, 1, bias=False), nn.BatchNorm2d(2*ndf), nn.LeakyReLU(0.2, True),
                                 nn.Conv2d(2*ndf, 4*ndf, 3, 2, 1, bias=False), nn.BatchNorm2d(4*ndf), nn.LeakyReLU(0.2, True),
                                 nn.Flatten(), *head)
    def forward(self, x): return self.net(x*2 - 1).squeeze(1)

def diff_augment(x):
    "Translation by up to ±3 px and one 14×14 cutout, the same for the whole batch (differentiable)"
    s = torch.randint(-3, 4, (2,)).tolist()
    x = torch.roll(F.pad(x, (3, 3, 3, 3)), shifts=s, dims=(2, 3))[:, :, 3:31, 3:31]
    m = torch.ones_like(x); cy, cx = torch.randint(0, 28, (2,)).tolist()
    m[:, :, max(0, cy-7):cy+7, max(0, cx-7):cx+7] = 0
    return x*m

def main(opts:set, epochs:int):
    torch.set_num_threads(1)
    cfg = load_config()
    ref = reference_classifier('mnist', cfg)
    x, _ = gan_training_set('mnist', 3000, 0)
    if 'noaug' in opts: x = x[:len(x)//6].repeat(6, 1, 1, 1)
    lr_g, lr_d = (1e-4, 4e-4) if 'ttur' in opts else (2e-4, 2e-4)
    bs = 32 if 'bs32' in opts else 64
    torch.manual_seed(0)
    G = init_dcgan(BigG() if 'big' in opts else DeepG() if 'deep' in opts else Generator(ngf=32))
    D = SND() if 'sn' in opts else init_dcgan(D3(ndf=64 if 'd64' in opts else 32, mlp='mlp' in opts)) if 'd3' in opts else init_dcgan(Discriminator(ndf=64 if 'd64' in opts else 32))
    ema = copy.deepcopy(G).eval()
    A = diff_augment if 'daug' in opts else (lambda t: t)
    g = torch.Generator().manual_seed(0)
    oG = torch.optim.Adam(G.parameters(), lr=lr_g, betas=(0.5, 0.999))
    oD = torch.optim.Adam(D.parameters(), lr=lr_d, betas=(0.5, 0.999))
    bce = F.binary_cross_entropy_with_logits
    def conf(m):
        p = predict_proba(ref, generate(m, 2000, seed=5)); share = torch.bincount(p.argmax(1), minlength=10).float()/len(p)
        return round(p.max(1).values.mean().item(), 4), round(share.min().item(), 4)
    t0, step = time.time(), 0
    print(f"variant {sorted(opts)}: {len(x)} images, batch {bs}, {len(x)//bs} steps/epoch", flush=True)
    for ep in range(epochs):
        if 'decay' in opts:
            f = min(1.0, 2*(epochs - ep)/epochs)
            for o, l in ((oG, lr_g), (oD, lr_d)):
                for pg in o.param_groups: pg['lr'] = l*f
        G.train(); D.train(); perm = torch.randperm(len(x), generator=g)
        for i in range(len(x)//bs):
            real = x[perm[i*bs:(i+1)*bs]]; fake = G(sample_z(bs, 100, g))
            lr_, lf = D(A(real)), D(A(fake.detach()))
            if 'hinge' in opts: dl = F.relu(1 - lr_).mean() + F.relu(1 + lf).mean()
            else: dl = bce(lr_, torch.ones_like(lr_)) + bce(lf, torch.zeros_like(lf))
            oD.zero_grad(); dl.backward(); oD.step()
            lg = D(A(fake)); gl = -lg.mean() if 'hinge' in opts else bce(lg, torch.ones_like(lg))
            oG.zero_grad(); gl.backward(); oG.step()
            step += 1; dec = min(0.999, (1 + step)/(10 + step))
            with torch.no_grad():
                for pe, pg in zip(ema.parameters(), G.parameters()): pe.lerp_(pg, 1 - dec)
                for be, bg in zip(ema.buffers(), G.buffers()): be.copy_(bg)
        print(dict(epoch=ep+1, steps=step, raw=conf(G), ema=conf(ema), seconds=round(time.time() - t0)), flush=True)

if __name__ == '__main__':
    opts = set(sys.argv[1].split(',')) if len(sys.argv) > 1 else {'dcgan'}
    main(opts, int(sys.argv[2]) if len(sys.argv) > 2 else 10)
