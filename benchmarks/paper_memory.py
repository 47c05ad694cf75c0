#!/usr/bin/env python
"""Estimated GPU memory of the `paper` profile's training steps, from the models and batch sizes themselves.

For every model the `paper` profile trains, at 1×28×28 (MNIST, Fashion-MNIST, EMNIST) and 3×32×32 (CIFAR-10, SVHN),
this builds the model with the `paper` widths, runs one forward and backward pass at the `paper` batch size on the CPU
and counts (a) parameters, (b) the optimiser's state (Adam: weights + gradients + two moments = 4 × 4 bytes per
parameter), (c) the activations autograd saves for the backward pass (`torch.autograd.graph.saved_tensors_hooks`, each
storage counted once). Estimate = (b) + (c) + 20 % for the allocator's fragmentation and the step's temporaries; the CUDA
context (about 0.3–0.5 GB) comes on top. It is an estimate, not a measurement on a GPU: none is lent to this project.

    python benchmarks/paper_memory.py
"""
import os, platform
os.environ.setdefault('LATENTNB_PROFILE', 'paper')
import torch
from latentnb.config import load_config

B = load_config('paper', seed_all=False)
SHAPES = {'1×28×28': (1, 28, 28), '3×32×32': (3, 32, 32)}

def saved_bytes(step):
    "Bytes of the tensors autograd saves during `step()` (one count per storage), then backward"
    seen, total = set(), [0]
    def pack(t):
        try: key = (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())
        except Exception: key = (id(t), t.numel()*t.element_size())
        if key not in seen: seen.add(key); total[0] += key[1]
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = step()
    loss.backward()
    return total[0]

def models(shape):
    "(name, batch size, [modules], step) for every model the paper profile trains, built for `shape`"
    from latentnb import argus, zoo, judges
    from latentnb.generators import conditional as gb
    from latentnb.generators import gan
    from latentnb.generators import vae, vqvae
    c, h, w = shape; n_cls = 10
    G = B.budget('gan'); A = B.budget('argus'); V = B.budget('vae'); GB = B.budget('giftbench')
    out = []
    g, d = gan.Generator(ngf=G.ngf, img_shape=shape), gan.Discriminator(ndf=G.ndf, img_shape=shape)
    out.append(('DiffGAN DCGAN G + D', 128, [g, d], lambda bs: d(g(torch.rand(bs, 100)*2 - 1)).mean() + d(torch.rand(bs, *shape)).mean()))
    cg = gb.CGAN(width=GB.cgan_width, n_classes=n_cls, img_shape=shape)
    out.append(('GIFTbench cGAN', 128, [cg], lambda bs: cg.D(cg.G(torch.randn(bs, 100), torch.randint(0, n_cls, (bs,))), torch.randint(0, n_cls, (bs,))).mean()))
    un = gb.GuidedUNet(channels=tuple(GB.ddpm_channels), n_classes=n_cls, img_shape=shape)
    out.append(('GIFTbench DDPM UNet', GB.ddpm_bs, [un], lambda bs: (lambda r: getattr(r, 'sample', r))(un(torch.randn(bs, *shape), torch.randint(0, 1000, (bs,)), torch.randint(0, n_cls, (bs,)))).float().mean()))
    for kind, m in (('mlp', vae.MLPVAE(V.latent_mlp, V.hidden, img_shape=shape)), ('deepconv', vae.DeepConvVAE(V.latent_deep, V.deep_ch, V.deep_code_ch, img_shape=shape))):
        out.append((f'SINVAD VAE ({kind})', V.bs, [m], (lambda m: lambda bs: sum(t.float().mean() for t in m(torch.rand(bs, *shape)) if torch.is_tensor(t)))(m)))
    vq = vqvae.VQVAE(n_codes=A.n_codes, code_dim=A.code_dim, ch=A.width, down=A.down, n_res=A.n_res, img_shape=shape)
    dx = argus.InputDiscriminator(img_shape=shape)
    out.append(('Argus VQ-VAE + D_x', A.bs, [vq, dx], lambda bs: (lambda r: (r[0] if isinstance(r, tuple) else r).mean() + dx(r[0] if isinstance(r, tuple) else r).mean())(vq(torch.rand(bs, *shape)))))
    subjects = {(1, 28, 28): [('M1/M2', zoo.PAIRS[1].a), ('M5/M6 LeNet-5', zoo.PAIRS[3].a), ('M7/M8 AlexNet', zoo.PAIRS[4].a)],
                (3, 32, 32): [('CIFAR P1 ResNet18', zoo.CIFAR_PAIRS[1].a), ('CIFAR P1 ResNet20', zoo.CIFAR_PAIRS[1].b),
                              ('CIFAR P2 Inception', zoo.CIFAR_PAIRS[2].a), ('Argus VGG16', zoo.ARGUS_SUBJECTS['VGG16'])]}
    for name, spec in subjects.get(tuple(shape), []):
        m = spec.build(shape, n_cls)
        out.append((f'zoo {name}', spec.bs, [m], (lambda m: lambda bs: m(torch.rand(bs, *shape)).mean())(m)))
    return out

def main():
    torch.manual_seed(0); torch.set_num_threads(max(1, torch.get_num_threads()))
    print(f"== paper-profile memory estimate, CPU {platform.processor() or platform.machine()}, torch {torch.__version__}, Adam state, float32")
    print(f"{'model':28s} {'shape':9s} {'batch':>5s} {'params':>11s} {'weights+opt MB':>15s} {'activations MB':>15s} {'estimate MB':>12s}")
    for sname, shape in SHAPES.items():
        for name, bs, mods, step in models(shape):
            try:
                n = sum(p.numel() for m in mods for p in m.parameters())
                act = saved_bytes(lambda: step(bs))
                wt = 16*n
                print(f"{name:28s} {sname:9s} {bs:5d} {n:11,d} {wt/2**20:15.1f} {act/2**20:15.1f} {1.2*(wt + act)/2**20:12.0f}")
            except Exception as e:
                print(f"{name:28s} {sname:9s} {bs:5d} failed: {type(e).__name__}: {str(e)[:120]}")

if __name__ == '__main__': main()
