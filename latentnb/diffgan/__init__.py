"""`diffgan_search(generator, model_a, model_b, budget_s=...)`: DiffGAN's NSGA-II search for inputs two models disagree on."""

# Written by hand: the code lives in `core` (notebook 24_search), which nbdev indexes (it skips `__init__.py`).
from .core import *
