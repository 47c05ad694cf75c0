"""`latentnb.giftbench`: one genetic search benchmarked across a VAE, a conditional GAN and a diffusion model, and its human study."""

# Written by hand: the code lives in `core` (notebook 80_giftbench), `study` (80_giftbench_study) and `panel`
# (80_giftbench_panel), which nbdev indexes (it skips `__init__.py`).
from .core import *
from .study import *
from .panel import *
