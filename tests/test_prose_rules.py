"""The sharper prose check (issue 42, item 3): one failing example per kind of hand-typed claim, and the prose it must let be."""
import json

import pytest

from latentnb.paper import known_commits, prose_hits, prose_hits_md

HEAD = sorted(known_commits())[0][:7]   # any commit of this checkout's `git log`

CLAIMS = {   # kind: (sentence, the numbers the check must name)
    'integer counts after a result verb': ('Our search found 1,234 failures overnight.', ['1,234']),
    'N of M': ('Disagreements turned up in 40 of 50 seeds.', ['40', '50']),
    'ratio Nx': ('The batched decoder is 3.4x faster.', ['3.4x']),
    'ratio N×': ('One thread per kernel made it 2× slower.', ['2×']),
    'ratio range': ('The slow machine took 2.0–3.0× as long.', ['2.0–3.0×']),
    'Accuracy = 0.9731': ('Accuracy = 0.9731 on the held-out digits.', ['0.9731']),
    '= 0.97': ('The judges agree with the labels, κ = 0.97.', ['0.97']),
    '≥ 92.5 %': ('The filter keeps ≥ 92.5 % of real digits.', ['92.5 %']),
    'our number beside the paper': ('The paper reports 23.48 %; our run gives 31.2 %.', ['31.2 %']),
    'our count beside the paper': ('Unlike the paper, our search found 777 inputs.', ['777']),
    'our ratio beside the paper': ('The published speed-up is beaten: ours is 7.7x.', ['7.7x']),
}


@pytest.mark.parametrize('kind', CLAIMS)
def test_each_new_kind_fails(kind):
    sentence, numbers = CLAIMS[kind]
    hits = prose_hits_md(sentence)
    assert hits, f"{kind}: {sentence!r} passed the check"
    assert hits[0][1] == numbers, hits


def test_history_note_with_unknown_commit_fails():
    note = '> **History** (commit 1234abc, quick): the sweep gave 0.994 at s = 1.5.'
    test = prose_hits_md(note)
    assert test and 'commit 1234abc not in git log' in test[0][1][0], test
    assert prose_hits_md('> **History** (an old run): it gave 0.93.')[0][1] == ['a History note names no commit']
    assert prose_hits_md(note.replace('1234abc', HEAD)) == []


ALLOWED = [
    'The paper found 1,229 triggering inputs in 1 h (Table 4), 4.08 times as many (ratio 4.08).',
    'DiffGAN §3.1–3.2, Eq. 2, Table 3 and Fig. 5; notebook 91 and notebooks (40–44); Python ≥ 3.10; v1.2.3; in 2026.',
    'Images are 28×28 (3×32×32 for CIFAR-10); population 50 × 500 generations; a fragment (14×14 of 28×28).',
    'SBX at λ = 0.1, σ = 1.5, β = 0.25, τ = 0.40, η = 15; brightness ~ U[0.7, 1.3]; keep ≥ 95 % and reject ≤ 5 %.',
    'The EMA decay is `ema = 0.999`; the profile `quick` runs `found 1,234` in code; we take the first 20 of the 100 seeds.',
    'The zoo trains 4 pairs of models on 10 classes, 3 runs each, with batch 128 for 10 epochs.',
    '| model | runs |\n|---|---|\n| [M1](nbs/10_zoo.ipynb#v0.93) | 3 |',
]


@pytest.mark.parametrize('text', ALLOWED)
def test_ordinary_prose_passes(text):
    assert prose_hits_md(text) == []


def test_readme_is_checked(tmp_path):
    (tmp_path/'README.md').write_text('# x\n\nIntro.\n\n## Results\n\nThe run took 48.8 min.\n\n```python\n# comment\nx = 0.93\n```\n')
    assert prose_hits(tmp_path/'README.md') == ['README.md § Results: 48.8 :: The run took 48.8 min.']


def test_notebook_history_note_checked(tmp_path):
    import subprocess
    git = lambda *a: subprocess.run(['git', '-C', str(tmp_path), *a], check=True, capture_output=True)
    git('init', '-q'); git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'one')  # a known history
    nb = {'cells': [{'cell_type': 'markdown', 'source': ['> **History** (commit 1234abc): it gave 0.93.']}]}
    (tmp_path/'t.ipynb').write_text(json.dumps(nb))
    assert prose_hits(tmp_path/'t.ipynb') == ['t.ipynb cell 0: History note: commit 1234abc not in git log :: '
                                                '> **History** (commit 1234abc): it gave 0.93.']
