#!/usr/bin/env python
"""Throughput of DiffGAN's validity filter (latentnb.validity) against a 60,000-image reference set.

Reference set: Fashion-MNIST train (60,000 images, the size of DiffGAN's GAN training data: 10k test images
+ 5 augmentations).  Queries: Fashion-MNIST test images, half of them with noise.  Prints images/s for the
exact most-similar-image SSIM search with L2 pruning (top-k), for brute force (every reference image), and
for the whole two-stage `filter_valid` (the project's discriminator layout at paper width, untrained: only its cost matters),
on the CPU and on the GPU when there is one.  Then the filter the RQ notebooks apply, `diffgan_filter(dataset)` (the
project's GAN, its 18,000-image training set as the reference set, calibrated thresholds, top-k then k_max for images
still below tau_S), on `--n-gen` generated images per dataset of `--datasets` (profile: $LATENTNB_PROFILE, default quick).
Not a timed test: run it by hand.  Rates are given per wall-clock
second and (CPU) per CPU-second of this process, the steadier number on a shared machine.

    python benchmarks/filter_throughput.py [--n 500] [--k 512] [--n-brute 5] [--threads 2] [--devices cpu cuda]
                                           [--n-gen 3000] [--datasets mnist fashion-mnist] [--skip-60k]
"""
import argparse, json, os, platform, time

import torch

from latentnb.data import load_dataset
from latentnb.generators.gan import Discriminator
from latentnb.validity import DEFAULT_K, SSIMIndex, calibrate_disc_threshold, exactness_check, filter_valid


def sync(dev):
    if dev.type == 'cuda': torch.cuda.synchronize()


def timed(dev, fn):
    "(result, wall seconds, CPU seconds of this process): on a shared machine the CPU time is the steadier number"
    sync(dev); w, c = time.perf_counter(), time.process_time()
    out = fn(); sync(dev)
    return out, time.perf_counter() - w, time.process_time() - c


def bench(dev, ref, q, heldout, k, n_brute):
    idx, t_index, _ = timed(dev, lambda: SSIMIndex(ref, device=dev, progress=False))
    idx.most_similar(q[:8], k=k, progress=False)                              # warm-up
    _, w_pruned, c_pruned = timed(dev, lambda: idx.most_similar(q, k=k, progress=False))
    brute, w_brute, c_brute = timed(dev, lambda: idx.most_similar(q[:n_brute], k=None, progress=False))
    D = Discriminator(ndf=64).eval().to(dev)
    tau = calibrate_disc_threshold(D, heldout.to(dev))
    df, w_filter, c_filter = timed(dev, lambda: filter_valid(q, D=D, disc_threshold=tau, index=idx, k=k, progress=False))
    import pandas as pd
    chk = exactness_check(idx, q[:n_brute], k=k, progress=False,
                          brute=pd.DataFrame(dict(ssim_brute=brute[0].numpy(), idx_brute=brute[1].numpy())))
    per = lambda n, w, c: dict(wall=round(n/w, 2), cpu=round(n/c, 2) if dev.type == 'cpu' else None)
    return dict(device=str(dev), n_ref=len(ref), k=k, pruned_fraction=round(1 - k/len(ref), 4), index_build_s=round(t_index, 2),
                pruned_images_per_s=per(len(q), w_pruned, c_pruned), brute_images_per_s=per(n_brute, w_brute, c_brute),
                filter_valid_images_per_s=per(len(q), w_filter, c_filter),
                exact_on_brute_subset=bool(chk.equal.all()), max_l2_rank=int(chk.l2_rank_of_argmax.max()),
                ssim_pass_rate=round(float(df.ssim_ok.mean()), 3))


def bench_diffgan(ds, n):
    "Images/s of `diffgan_filter(ds).table` on `n` generated images (uint8, as the search archive stores them)"
    from latentnb.config import load_config
    from latentnb.generators.gan import load_gan, generate
    from latentnb.validity import diffgan_filter
    cfg = load_config(seed_all=False)
    (flt, w_build, _) = timed(torch.device('cpu'), lambda: diffgan_filter(ds, cfg))
    G, _ = load_gan(ds, cfg=cfg)
    x = (generate(G, n, seed=123)*255).round().to(torch.uint8)
    flt.table(x[:16])                                                           # warm-up
    tab, w, c = timed(torch.device('cpu'), lambda: flt.table(x))
    return dict(filter='diffgan_filter', dataset=ds, profile=cfg.profile, n=n, n_ref=len(flt.index), k=flt.k, k_max=flt.k_max,
                tau_D=round(flt.tau_D, 3), tau_S=round(flt.tau_S, 3), build_s=round(w_build, 1), seconds=round(w, 1),
                images_per_s=dict(wall=round(n/w, 1), cpu=round(n/c, 1)), escalated=round(float(tab.escalated.mean()), 3),
                keep=round(float(tab.keep.mean()), 3))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--n', type=int, default=500, help='query images (Fashion-MNIST test)')
    ap.add_argument('--k', type=int, default=DEFAULT_K, help='L2 candidates scored with SSIM')
    ap.add_argument('--n-brute', type=int, default=5, help='queries timed with brute force (and checked for exactness)')
    ap.add_argument('--threads', type=int, default=int(os.environ.get('LATENTNB_THREADS', 0) or 2))
    ap.add_argument('--devices', nargs='*', default=None, help="default: cpu, plus cuda when available")
    ap.add_argument('--n-gen', type=int, default=3000, help='generated images filtered by diffgan_filter')
    ap.add_argument('--datasets', nargs='*', default=['mnist'], help='datasets whose diffgan_filter is timed')
    ap.add_argument('--skip-60k', action='store_true', help='time diffgan_filter only')
    a = ap.parse_args()
    torch.set_num_threads(a.threads); torch.manual_seed(0)
    ref, _ = load_dataset('fashion-mnist', 'train')
    x, _ = load_dataset('fashion-mnist', 'test', n=a.n + 1000)
    q, heldout = x[:a.n].clone(), x[a.n:]
    q[1::2] = (q[1::2] + 0.3*torch.randn_like(q[1::2])).clamp(0, 1)
    devs = a.devices or (['cpu'] + (['cuda'] if torch.cuda.is_available() else []))
    print(f"# filter throughput: {len(ref)} reference images, {a.n} queries, k={a.k}, torch {torch.__version__}, "
          f"{a.threads} CPU thread(s), {platform.processor() or platform.machine()}"
          + (f", GPU {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ''))
    if not a.skip_60k:
        for d in devs:
            print(json.dumps(bench(torch.device(d), ref, q, heldout, a.k, a.n_brute)), flush=True)
    for ds in a.datasets:
        print(json.dumps(bench_diffgan(ds, a.n_gen)), flush=True)


if __name__ == '__main__':
    main()
