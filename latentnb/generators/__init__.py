"""`LatentGenerator`: every generative model of the project behind one interface; `as_generator(obj)` wraps any of them."""

# Written by hand: the code lives in `base` (notebook 06_generators), which nbdev indexes (it skips `__init__.py`).
from .base import *
