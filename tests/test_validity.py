"latentnb.validity: SSIM agrees with scikit-image and torchmetrics; the pruned most-similar search equals brute force."
import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from latentnb.data import load_dataset
from latentnb.validity import (SSIMIndex, calibrate_disc_threshold, disc_scores, exactness_check, exactness_summary,
                               filter_valid, ssim_pairs, ssim_reference, suggest_k)


@pytest.fixture(scope='module')
def mnist():
    ref, _ = load_dataset('mnist', 'test', n=600)
    q, _ = load_dataset('mnist', 'train', n=10)
    torch.manual_seed(0)
    queries = torch.cat([q, (q + 0.3*torch.randn_like(q)).clamp(0, 1), torch.rand(4, 1, 28, 28)])
    return ref, queries


def test_ssim_matches_both_libraries(mnist):
    ref, q = mnist
    a, b = q[:16], ref[:16]
    sk, tm = ssim_reference(a, b, 'skimage'), ssim_reference(a, b, 'torchmetrics')
    np.testing.assert_allclose(sk, tm, atol=1e-4)
    np.testing.assert_allclose(ssim_pairs(a, b).numpy(), sk, atol=1e-4)


def test_ssim_multichannel_matches_skimage():
    torch.manual_seed(1)
    a, b = torch.rand(3, 3, 16, 20), torch.rand(3, 3, 16, 20)
    np.testing.assert_allclose(ssim_pairs(a, b).numpy(), ssim_reference(a, b), atol=1e-4)


def test_pruned_equals_brute_force(mnist):
    ref, q = mnist
    idx = SSIMIndex(ref, device='cpu', progress=False)
    chk = exactness_check(idx, q, k=128, progress=False)
    assert chk.equal.all(), chk[~chk.equal]
    assert (chk.idx_pruned == chk.idx_brute).all()
    s = exactness_summary(chk, 128, len(idx))
    assert s['all_equal'] and s['max_l2_rank'] < 128 and s['pruned_fraction'] == pytest.approx(1 - 128/600)
    # the brute-force maximum really is the maximum over every reference image
    for i in range(3):
        assert idx.ssim_all(q[i]).max().item() == pytest.approx(chk.ssim_brute[i], abs=1e-6)


def test_too_small_k_is_detected(mnist):
    "With k=1 the pruned search misses the SSIM maximiser for some image, and the check says so"
    ref, q = mnist
    chk = exactness_check(SSIMIndex(ref, device='cpu', progress=False), q, k=1, progress=False)
    assert (chk.ssim_pruned <= chk.ssim_brute + 1e-6).all()
    missed = ~chk.equal
    assert missed.any(), "k=1 found every SSIM maximiser: the check detected nothing"
    assert (chk.l2_rank_of_argmax[missed] > 0).all()   # a miss is an image whose SSIM maximiser is not its L2-nearest
    s = exactness_summary(chk, 1, len(ref))
    assert not s['all_equal'] and s['max_l2_rank'] >= 1 and s['max_ssim_gap'] > 0
    assert suggest_k(chk) > 1   # and the suggested k is larger than the one that missed


class _D(nn.Module):
    def __init__(self):
        super().__init__(); self.lin = nn.Linear(784, 1)
    def forward(self, x): return self.lin(x.flatten(1)).squeeze(1)


def test_filter_valid(mnist):
    ref, q = mnist
    torch.manual_seed(0); D = _D().eval()
    tau = calibrate_disc_threshold(D, ref[:200], q=0.2)
    assert (disc_scores(D, ref[:200]) >= tau).mean() == pytest.approx(0.8, abs=0.01)
    df = filter_valid(q, D=D, disc_threshold=tau, index=SSIMIndex(ref, device='cpu', progress=False), k=64, progress=False)
    assert isinstance(df, pd.DataFrame) and len(df) == len(q)
    assert set(df.columns) >= {'disc_score', 'disc_ok', 'ssim', 'nearest', 'ssim_ok', 'keep'}
    assert (df.keep == ((df.disc_score >= tau) & (df.ssim >= 0.40))).all()
    assert not df.ssim_ok.iloc[-4:].any()   # uniform noise is never similar to a digit
    assert df.ssim_ok.iloc[:10].all()         # real digits are: the checks above are not about an all-rejecting filter


def test_errors(mnist):
    ref, q = mnist
    with pytest.raises(ValueError, match=r'values must lie in \[0, 1\]'):
        SSIMIndex(ref*255)
    with pytest.raises(ValueError, match='smaller than the 11-pixel SSIM window'):
        ssim_pairs(torch.rand(2, 1, 8, 8), torch.rand(2, 1, 8, 8))
    with pytest.raises(ValueError, match='disc_threshold is needed'):
        filter_valid(q, D=_D())


def test_standins_follow_the_image_shape():
    "Half-side fragments and quarter-side tiles: 14/7 px on 28×28 (as before), 16/8 px on 32×32, every channel alike"
    from latentnb.validity import invalid_standins
    x, _ = load_dataset('colour-mnist', 'test', n=8)
    s, k = invalid_standins(x, seed=1)
    assert s.shape == x.shape and set(k) == {'noise', 'blend', 'fragment', 'scrambled'}
    i = list(k).index('scrambled')
    for c in range(3): assert torch.equal(s[i, c].flatten().sort().values, x[i, c].flatten().sort().values)
    i = list(k).index('fragment'); kept = (s[i] != 0).any(0)
    rows, cols = kept.any(1).nonzero().flatten(), kept.any(0).nonzero().flatten()
    assert rows.max() - rows.min() < 16 and cols.max() - cols.min() < 16
    with pytest.raises(ValueError, match='multiples of 4'): invalid_standins(torch.rand(2, 3, 30, 30))


def test_colour_most_similar_is_exact():
    ref, _ = load_dataset('colour-mnist', 'test', n=200)
    q, _ = load_dataset('colour-mnist', 'train', n=6)
    chk = exactness_check(SSIMIndex(ref, device='cpu', progress=False), q, k=64, progress=False)
    assert chk.equal.all()
    np.testing.assert_allclose(chk.ssim_brute, ssim_reference(q, ref[torch.as_tensor(chk.idx_brute.to_numpy().copy())]), atol=1e-4)
