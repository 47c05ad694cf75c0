"""`latentnb.argus`: Argus's VQ-VAE latent interpolation towards another class, kept realistic by two discriminators."""

# Written by hand: the code lives in `core` (notebook 60_argus) and `protocol` (60_argus_protocol), which nbdev indexes
# (it skips `__init__.py`).
from .core import *
from .protocol import *
