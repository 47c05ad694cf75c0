"""SINVAD's searches in a VAE's latent space and in pixel space: hill climbing, the genetic algorithm, interpolation, surprise."""

# Written by hand: the code lives in `core` (notebook 51_sinvad) and `jobs` (51_sinvad_jobs), which nbdev indexes
# (it skips `__init__.py`).
from .core import *
from .jobs import *
