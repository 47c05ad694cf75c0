"Geometric and Shannon diversity on hand-computed sets."
import math

import numpy as np
import torch

from latentnb.search.metrics import geometric_diversity, shannon_diversity, shannon_pooled, subset_mean


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


def test_shannon_pooled_hand_computed():
    # pooled values 0,0,0,1 (two images of two pixels): -(3/4 ln 3/4 + 1/4 ln 1/4)
    s = shannon_pooled(torch.tensor([[0.0, 0.0], [0.0, 1.0]]))
    assert abs(s.H + (0.75*math.log(0.75) + 0.25*math.log(0.25))) < 1e-9 and abs(s.eH - math.exp(s.H)) < 1e-9
    u8 = torch.arange(256, dtype=torch.uint8).reshape(4, 64)       # every 8-bit value once: the maximum ln 256
    assert abs(shannon_pooled(u8).H - math.log(256)) < 1e-9
    # the two definitions differ: copies of one image with three grey levels are diverse pooled, not per position
    copies = torch.tensor([[0.1, 0.5, 0.9]]).repeat(3, 1)
    assert abs(shannon_pooled(copies).H - math.log(3)) < 1e-6 and shannon_diversity(copies).H == 0
    assert shannon_pooled(torch.rand(4, 10)).H > math.log(39)        # distinct floats: close to ln 40
