"""Prose from numbers: no notebook's Markdown, nor README.md, states a measured number by hand (latentnb.paper.prose_hits, notebook 04).
The rules, one failing example per kind: tests/test_prose_rules.py."""
from pathlib import Path

import pytest

from latentnb.paper import history_unchecked, known_commits, prose_hits, prose_hits_md

ROOT = Path(__file__).resolve().parent.parent
NBS = sorted((ROOT/'nbs').glob('*.ipynb'))


def test_there_are_notebooks():
    assert len(NBS) > 30


@pytest.mark.parametrize('path', NBS + [ROOT/'README.md'], ids=lambda p: p.name)
def test_no_hand_typed_measurements(path):
    hits = prose_hits(path)
    assert not hits, ("Markdown states measured numbers by hand: print them from the run, cite the paper's own numbers, or put "
                      "them in a '> **History** (commit <sha>)' note naming a commit of `git log`:\n" + '\n'.join(hits))


def test_the_check_can_fail():
    assert prose_hits_md('Our search found 13.5 % valid inputs.')
    assert prose_hits_md('FID 3.14 vs 1.06 for real digits.')
    assert prose_hits_md('The search found 1,234 failures in 40 of 50 seeds; it is 3.4x faster, κ ≈ 0.97.')
    assert prose_hits_md('The paper trains 37 models.')   # not one of the paper's numbers
    assert not prose_hits_md('The paper reports 23.48 %.')


def test_history_notes_commits_are_checked():
    why = history_unchecked(ROOT)   # no .git, a shallow clone: History notes are judged by their form alone
    if why: pytest.skip(f"History notes' commits are not checked here: {why}")
    assert known_commits(ROOT)
