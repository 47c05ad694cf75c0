"latentnb.stats against scipy and hand-computed values."
import numpy as np
import pytest
from scipy import stats as sps

from latentnb.stats import cliffs_delta, cliffs_magnitude, welch_test, pearson, compare, holm


def _cliffs_bruteforce(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return (np.sign(a[:, None] - b[None, :])).sum()/(len(a)*len(b))


@pytest.mark.parametrize('seed', range(5))
def test_cliffs_delta_matches_bruteforce_and_mannwhitney(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(1, 6, 37), rng.integers(1, 6, 23)          # Likert-like, many ties
    d = cliffs_delta(a, b)
    assert d == pytest.approx(_cliffs_bruteforce(a, b), abs=1e-12)
    U = sps.mannwhitneyu(a, b).statistic
    assert d == pytest.approx(2*U/(len(a)*len(b)) - 1, abs=1e-12)


def test_cliffs_delta_hand_values():
    assert cliffs_delta([1, 2, 3], [2, 2]) == 0
    assert cliffs_delta([3, 4], [1, 2, 3]) == pytest.approx(5/6)
    assert cliffs_delta([10], [1, 2, 3]) == 1 and cliffs_delta([0], [1, 2, 3]) == -1
    assert cliffs_delta([1, 2], [3]) == -cliffs_delta([3], [1, 2])


def test_cliffs_magnitude_thresholds():
    assert [cliffs_magnitude(x) for x in (0.146, 0.147, 0.329, 0.33, 0.473, 0.474, -1)] == \
        ['negligible', 'small', 'small', 'medium', 'medium', 'large', 'large']


def test_welch_matches_scipy_and_hand():
    a, b = [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 8.0, 10.0, 12.0]
    w = welch_test(a, b)
    r = sps.ttest_ind(a, b, equal_var=False)
    assert w.t == pytest.approx(r.statistic) and w.p == pytest.approx(r.pvalue)
    # by hand: means 3 and 7, variances 2.5 and 14
    t = (3 - 7)/np.sqrt(2.5/5 + 14/6)
    df = (2.5/5 + 14/6)**2/((2.5/5)**2/4 + (14/6)**2/5)
    assert w.t == pytest.approx(t) and w.df == pytest.approx(df)
    assert (w.mean_a, w.mean_b) == (3, 7)


def test_welch_rejects_tiny_and_nan():
    with pytest.raises(ValueError, match='at least 2'): welch_test([1], [1, 2])
    with pytest.raises(ValueError, match='NaN'): welch_test([1, np.nan], [1, 2])
    with pytest.raises(ValueError, match='empty'): welch_test([], [1, 2])


def test_pearson_matches_scipy():
    rng = np.random.default_rng(1)
    x = rng.normal(size=50); y = 0.5*x + rng.normal(size=50)
    r, p = pearson(x, y)
    ref = sps.pearsonr(x, y)
    assert r == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)
    assert pearson([1, 2, 3, 4], [2, 4, 6, 8])[0] == pytest.approx(1.0)
    assert np.isnan(pearson([1, 2, 3], [5, 5, 5])[0])
    with pytest.raises(ValueError, match='paired'): pearson([1, 2, 3], [1, 2])


def test_compare_row_layout():
    row = compare([1, 2, 3], [4, 5, 6], 'test', 'SINVAD', dataset='mnist')
    assert row['dataset'] == 'mnist' and row["Cliff's δ"] == -1 and row['magnitude'] == 'large'
    assert row['mean test'] == 2 and row['mean SINVAD'] == 5 and row['n'] == '3/3'


def test_holm():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
