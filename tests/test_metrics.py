"Geometric and Shannon diversity on hand-computed sets."
import math

import numpy as np
import torch

from latentnb.metrics import geometric_diversity, shannon_diversity, subset_mean


def test_geometric_diversity_hand_computed():
    assert abs(geometric_diversity(torch.eye(4))) < 1e-8
    v = torch.tensor([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0]])  # cos = 0.6: det = 1 - 0.36
    assert abs(geometric_diversity(v) - math.log(0.64)) < 1e-6
    assert geometric_diversity(torch.tensor([[2.0, 0.0], [5.0, 0.0]])) < -20  # duplicates after normalising


def test_shannon_hand_computed():
    x = torch.tensor([[0.0, 0.0], [0.0, 0.99], [0.99, 0.99], [0.99, 0.99]])  # bins=2
    # pixel 0: levels (0,0,1,1) -> ln 2; pixel 1: (0,1,1,1) -> -(1/4 ln 1/4 + 3/4 ln 3/4)
    h1 = -(0.25*math.log(0.25) + 0.75*math.log(0.75))
    s = shannon_diversity(x, bins=2)
    assert abs(s.H - (math.log(2) + h1)/2) < 1e-6 and abs(s.eH - math.exp(s.H)) < 1e-9


def test_subset_mean_equal_sizes():
    x = torch.rand(30, 16)
    assert np.isnan(subset_mean(geometric_diversity, x, 31))
    assert subset_mean(geometric_diversity, x, 10, seed=1) == subset_mean(geometric_diversity, x, 10, seed=1)
