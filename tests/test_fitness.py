"Hand-computed cases of DiffGAN's fitness functions (Eq. 1, Eq. 2) and the re-clustering policy."
import math

import numpy as np
import pytest
import torch

from latentnb.search.fitness import NO_REPS_DIVERSITY, ReclusterPolicy, divergence, diversity, representatives


def test_divergence_hand_computed():
    pa = torch.tensor([[1.0, 0.0], [0.6, 0.4], [0.5, 0.5]])
    pb = torch.tensor([[0.0, 1.0], [0.6, 0.4], [0.3, 0.7]])
    # row 0: sqrt(2) + 1 (labels differ); row 1: 0; row 2: sqrt(0.08) + 1 (argmax 0 vs 1)
    want = torch.tensor([math.sqrt(2) + 1, 0.0, math.sqrt(0.08) + 1])
    assert torch.allclose(divergence(pa, pb), want, atol=1e-6)


def test_divergence_is_symmetric_and_batched():
    g = torch.Generator().manual_seed(0)
    pa, pb = torch.softmax(torch.randn(50, 10, generator=g), 1), torch.softmax(torch.randn(50, 10, generator=g), 1)
    assert torch.allclose(divergence(pa, pb), divergence(pb, pa))
    one = torch.stack([divergence(pa[i:i+1], pb[i:i+1])[0] for i in range(50)])
    assert torch.allclose(divergence(pa, pb), one)


def test_diversity_hand_computed():
    imgs = torch.tensor([[3.0, 4.0], [0.0, 2.0]])
    reps = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    # [3,4]: cos to [1,0] = 0.6, to [1,1] = 7/(5*sqrt 2) = 0.98995 -> min distance 0.01005
    # [0,2]: cos to [1,0] = 0, to [1,1] = 1/sqrt 2 -> min distance 1 - 0.70711
    want = torch.tensor([1 - 7/(5*math.sqrt(2)), 1 - 1/math.sqrt(2)])
    assert torch.allclose(diversity(imgs, reps), want, atol=1e-6)


def test_diversity_without_representatives():
    assert torch.equal(diversity(torch.rand(4, 1, 5, 5), None), torch.full((4,), NO_REPS_DIVERSITY))
    assert torch.equal(diversity(torch.rand(4, 1, 5, 5), torch.zeros(0, 1, 5, 5)), torch.full((4,), NO_REPS_DIVERSITY))


def test_representatives_one_per_blob():
    rng = np.random.default_rng(1)
    centres = rng.random((4, 100)) > 0.5
    x = np.concatenate([np.clip(c + 0.03*rng.standard_normal((25, 100)), 0, 1) for c in centres]).astype(np.float32)
    idx, lab = representatives(torch.from_numpy(x), reducer='pca', min_cluster_size=5)
    assert sorted(i // 25 for i in idx) == [0, 1, 2, 3]
    assert all(lab[i] >= 0 for i in idx)


def test_policy_bounded_number_of_clusterings():
    pol, last, n_clu = ReclusterPolicy(growth=0.5, min_new=10, max_share=None), 0, 0
    for n in range(0, 200_001, 100):
        if pol.due(n, last): last, n_clu = n, n_clu + 1
    assert n_clu <= 30
    with pytest.raises(ValueError, match="accepted are 'umap' and 'pca'"):
        representatives(torch.rand(40, 16), reducer='tsne')
