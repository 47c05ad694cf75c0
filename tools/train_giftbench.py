"""Train (or load) the GIFTbench models of a profile: the class-conditional GAN, the diffusion model and the classifier under test (GiftDeepConv) of each dataset.

    LATENTNB_PROFILE=quick LATENTNB_THREADS=1 nice -n 19 .venv/bin/python tools/train_giftbench.py mnist --kinds cGAN
    LATENTNB_PROFILE=paper .venv/bin/python tools/train_giftbench.py            # every dataset and kind, on the GPU when there is one
    LATENTNB_PROFILE=ci .venv/bin/python tools/train_giftbench.py colour-mnist --kinds cGAN DDIM   # any dataset of a supported shape (3x32x32 here)

Each checkpoint goes through `latentnb.generators.conditional.load_cgan` / `load_ddpm` (`load_or_train`: a checkpoint whose
recorded spec matches is loaded, a missing or stale one is trained on `cfg.device` and saved with its manifest
entry: spec, training seconds, device); each model builds for the dataset's (C, H, W) and class count, and the spec records
them when they are not 1x28x28 and 10. Then it prints the checkpoint's label faithfulness and confidence
under the reference classifier (the quality gates of notebook 81). The kinds are the core's names, in any case
(`latentnb.generators.generator_kind`): 'DDIM' is the diffusion model, its UNet trained by DDPM (checkpoint `<dataset>-ddpm-unet`)."""
import argparse, time
import torch
from latentnb.config import load_config
from latentnb.checkpoints import checkpoint_entry
from latentnb.giftbench import load_generator, sample_quality, gift_classifier
from latentnb.generators import generator_kind
from latentnb.generators.conditional import DATASETS

def _kind(s:str) -> str:
    "'clf', or a kind of generator this script trains ('cGAN', 'DDIM'), in any case"
    if s.casefold() == 'clf': return 'clf'
    try: return generator_kind(s, ('cGAN', 'DDIM'), '--kinds')
    except ValueError as e: raise argparse.ArgumentTypeError(f"{e} or clf") from None

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('datasets', nargs='*', default=None, help=f"datasets (default: the profile's; accepted: those of a shape the models build for, {', '.join(DATASETS)})")
    ap.add_argument('--kinds', nargs='*', type=_kind, default=['cGAN', 'DDIM', 'clf'],
                    help='cGAN, DDIM (any case) and clf, the classifier under test of notebook 82')
    ap.add_argument('--n', type=int, default=500, help='samples for the faithfulness check')
    a = ap.parse_args()
    cfg = load_config(); B = cfg.budget('giftbench')
    print(f"profile {cfg.profile}, device {cfg.device}, threads {torch.get_num_threads()}")
    for ds in a.datasets or B.datasets:
        for kind in a.kinds:
            if kind == 'clf':
                t0 = time.time(); gift_classifier(ds, cfg)
                print(f"{ds}-gift-deepconv: {checkpoint_entry(f'{ds}-gift-deepconv', cfg=cfg)['metrics']} ({time.time() - t0:.0f} s)", flush=True); continue
            t0 = time.time(); gen = load_generator(ds, kind, cfg)
            name = f"{ds}-{'cgan-gd' if kind == 'cGAN' else 'ddpm-unet'}"   # the checkpoints' names
            e = checkpoint_entry(name, cfg=cfg)
            q = sample_quality(gen, ds, a.n, cfg=cfg)
            print(f"{name}: {e['metrics']} | faithfulness {q['faithfulness']:.3f}, confidence {q['confidence']:.3f} ({time.time() - t0:.0f} s)", flush=True)

if __name__ == '__main__': main()
