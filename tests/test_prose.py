"""Prose from numbers: no notebook's Markdown states a measured number by hand (latentnb.paper.prose_hits, notebook 04)."""
from pathlib import Path

import pytest

from latentnb.paper import prose_hits, prose_hits_md

NBS = sorted((Path(__file__).resolve().parent.parent/'nbs').glob('*.ipynb'))


def test_there_are_notebooks():
    assert len(NBS) > 30


@pytest.mark.parametrize('nb', NBS, ids=lambda p: p.name)
def test_no_hand_typed_measurements(nb):
    hits = prose_hits(nb)
    assert not hits, ("Markdown states measured numbers by hand: print them from the run, cite the paper, or put them in a "
                      "'> **History** (commit <sha>)' note:\n" + '\n'.join(hits))


def test_the_check_can_fail():
    assert prose_hits_md('Our search found 13.5 % valid inputs.')
    assert prose_hits_md('FID 3.14 vs 1.06 for real digits.')
    assert not prose_hits_md('The paper reports 23.48 %.')
