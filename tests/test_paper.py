"""The vendored published numbers: unchanged, equal to the shared copy when it is there, and readable as tables."""
import hashlib
from pathlib import Path

import pytest

from latentnb.paper import PUBLISHED_SHA256, published_path, published_table, pnum, claim, paper_vs_ours

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent/'shared'/'papers'/'published_numbers.md'


def test_vendored_copy_is_unchanged():
    assert hashlib.sha256(published_path().read_bytes()).hexdigest() == PUBLISHED_SHA256


@pytest.mark.skipif(not SHARED.exists(), reason='no shared/ beside the checkout')
def test_vendored_copy_equals_shared():
    assert SHARED.read_bytes() == published_path().read_bytes(), \
        'shared/papers/published_numbers.md changed: copy it into data/papers/ and update the sha256 (data/papers/README.md)'


def test_tables_of_every_paper_parse():
    for heading, col, lo, hi in [('Table 4 — RQ1', 'DiffGAN mean (derived)', 1000, 20000),
                                 ('Table 3 — MNIST error rate', None, None, None),
                                 ('ICST\'25 Table III — MNIST and SVHN', None, None, None),
                                 ('RQ2 — Table 3', None, None, None)]:
        t = published_table(heading)
        assert len(t) > 0 and len(t.columns) > 1, heading
        if col: assert t[col].map(pnum).dropna().between(lo, hi).all()


def test_verdicts_are_checked():
    with pytest.raises(ValueError, match='unknown verdict'):
        paper_vs_ours([dict(claim='x', paper='1', ours='2', verdict='maybe', note='')])
    assert paper_vs_ours([claim('x', 1, 2, True)]).verdict.tolist() == ['holds']
