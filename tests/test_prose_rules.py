"""The sharper prose check (issue 42, item 3): one failing example per kind of hand-typed claim, and the prose it must let be."""
import json
import subprocess

import pytest

from latentnb.paper import history_unchecked, known_commits, prose_hits, prose_hits_md

CLAIMS = {   # kind: (sentence, the numbers the check must name)
    'integer counts after a result verb': ('Our search found 1,234 failures overnight.', ['1,234']),
    'integer counts before a past-tense verb': ('Overnight 1,234 inputs were flagged.', ['1,234']),
    'N of M': ('Disagreements turned up in 40 of 50 seeds.', ['40', '50']),
    'N/M': ('The search won in 36/36 runs.', ['36/36']),
    'ratio Nx': ('The batched decoder is 3.4x faster.', ['3.4x']),
    'ratio N×': ('One thread per kernel made it 2× slower.', ['2×']),
    'ratio range': ('The slow machine took 2.0–3.0× as long.', ['2.0–3.0×']),
    'Accuracy = 0.9731': ('Accuracy = 0.9731 on the held-out digits.', ['0.9731']),
    '= 0.97': ('The judges agree with the labels, κ = 0.97.', ['0.97']),
    '≥ 92.5 %': ('The filter keeps ≥ 92.5 % of real digits.', ['92.5 %']),
    '≈ 0.97': ('The judges agree with the labels, κ ≈ 0.97.', ['0.97']),
    '~ N s': ("UMAP's compile costs ~10 s per process.", ['10']),
    'about N': ('The filter compares about 50,000 pairs per second.', ['50,000']),
    'a duration taken': ('The 24 runs take 9 min on two cores.', ['9']),
    "a profile's value": ('The DDIM samples with 3 steps under `ci`.', ['3']),
    "a profile's value beside the paper": ("The paper's budgets are hours; at `quick` they are 15 s.", ['15']),
    'our number beside the paper': ('The paper reports 23.48 %; our run gives 31.2 %.', ['31.2 %']),
    'our count beside the paper': ('Unlike the paper, our search found 777 inputs.', ['777']),
    'our ratio beside the paper': ('The published speed-up is beaten: ours is 7.7x.', ['7.7x']),
    'an integer in a paper sentence': ('The paper trains 37 models per dataset.', ['37']),
    'a decimal in a paper sentence': ("The authors' threshold of 0.4321 is kept.", ['0.4321']),
}


@pytest.mark.parametrize('kind', CLAIMS)
def test_each_new_kind_fails(kind):
    sentence, numbers = CLAIMS[kind]
    hits = prose_hits_md(sentence)
    assert hits, f"{kind}: {sentence!r} passed the check"
    assert hits[0][1] == numbers, hits


PAPERS_OWN = [   # the paper's numbers in a sentence that cites it: as published, rounded, as a fraction or a percentage
    'The paper found 1,229 triggering inputs in 1 h (Table 4), 4.08 times as many (ratio 4.08).',
    'The paper trains 16 models, 8 pairs, with an SSIM threshold of 0.40 (0.4) and an accuracy of 99.26 % (99.3 %).',
    'The paper reports an error rate of 23.48 %, a share of 0.2348; the published MNIST ratio is 2.70x (1.49–4.78x).',
    'The authors trained on MNIST 60,000 images at lr 0.001.',
    'The paper ranks 7 methods; with M methods here, "ranks ~5–7" reads as a mean rank of at least M − 2.',
]


ALLOWED = [
    'DiffGAN §3.1–3.2, Eq. 2, Table 3 and Fig. 5; notebook 91 and notebooks (40–44); Python ≥ 3.10; v1.2.3; in 2026.',
    'Images are 28×28 (3×32×32 for CIFAR-10); population 50 × 500 generations; a fragment (14×14 of 28×28).',
    'SBX at λ = 0.1, σ = 1.5, β = 0.25, τ = 0.40, η = 15; brightness ~ U[0.7, 1.3]; keep ≥ 95 % and reject ≤ 5 %.',
    'The EMA decay is `ema = 0.999`; the profile `quick` runs `found 1,234` in code; we take the first 20 of the 100 seeds.',
    'The zoo trains 4 pairs of models on 10 classes, 3 runs each, with batch 128 for 10 epochs.',
    '| model | runs |\n|---|---|\n| [M1](nbs/10_zoo.ipynb#v0.93) | 3 |',
    'ResNet18, LeNet-5, MNIST-10 and a 4-conv net on a 2-core CPU; lr 1e-3; the top-2 labels; 60k images.',
    'ADAPT (Lee et al., ISSTA 2020) and DiffChaser (Xie et al., IJCAI 2019) are the paper\'s baselines; run on 2026-11-26.',
    'The test inputs on which pair 1 already disagrees; issue 27 found one network.',
    'A seed retires once 9 fault types were found; the 10 best survive; each gene mutates with probability 1/100.',
    'One package per paper: DiffGAN (24, 40, 41; narrative 25, 32, 42–44), SINVAD (51; 54, 56).',
    "| | 54 | [SINVAD RQ4](sinvad_vae_architecture.html) | latent sizes for the paper's MLP VAE |",
    'Its exit status: 0 done, 1 a cell failed, 2 wrong inputs, 130 interrupted.',
]


@pytest.mark.parametrize('text', PAPERS_OWN + ALLOWED)
def test_ordinary_prose_passes(text):   # the paper's own numbers, and what cannot be a measurement
    assert prose_hits_md(text) == []


@pytest.fixture(scope='module')
def real_commit():
    why = history_unchecked()
    if why: pytest.skip(f"History notes' commits cannot be checked here: {why}")
    sha = subprocess.run(['git', 'rev-parse', '--short', 'HEAD~5'], capture_output=True, text=True).stdout.strip()
    return sha or sorted(known_commits())[0][:7]   # a history shorter than 6 commits: any of its commits


def test_history_note_with_unknown_commit_fails(real_commit):
    note = '> **History** (commit 1234abc, quick): the sweep gave 0.994 at s = 1.5.'
    test = prose_hits_md(note)
    assert test and 'commit 1234abc not in git log' in test[0][1][0], test
    assert prose_hits_md('> **History** (an old run): it gave 0.93.')[0][1] == ['a History note names no commit']
    assert prose_hits_md(note.replace('1234abc', real_commit)) == []


def test_without_git_history_the_commits_are_not_judged(tmp_path):
    why = history_unchecked(tmp_path)
    assert 'no .git' in why, why   # a clear reason, not a failure
    assert known_commits(tmp_path) == frozenset()
    nb = {'cells': [{'cell_type': 'markdown', 'source': ['> **History** (commit 1234abc): it gave 0.93.']}]}
    (tmp_path/'t.ipynb').write_text(json.dumps(nb))
    with pytest.warns(UserWarning, match="History notes' commits are not checked: .*no .git"):
        assert prose_hits(tmp_path/'t.ipynb') == []
    assert prose_hits_md('> **History** (commit 1234abc): 0.93.', commits=frozenset()) == []


def test_readme_is_checked(tmp_path):
    (tmp_path/'README.md').write_text('# x\n\nIntro.\n\n## Results\n\nThe run took 48.8 min.\n\n```python\n# comment\nx = 0.93\n```\n')
    with pytest.warns(UserWarning, match='not checked'):   # tmp_path has no git history
        assert prose_hits(tmp_path/'README.md') == ['README.md § Results: 48.8 :: The run took 48.8 min.']


def test_notebook_history_note_checked(tmp_path):
    git = lambda *a: subprocess.run(['git', '-C', str(tmp_path), *a], check=True, capture_output=True)
    git('init', '-q'); git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'one')  # a known history
    nb = {'cells': [{'cell_type': 'markdown', 'source': ['> **History** (commit 1234abc): it gave 0.93.']}]}
    (tmp_path/'t.ipynb').write_text(json.dumps(nb))
    assert prose_hits(tmp_path/'t.ipynb') == ['t.ipynb cell 0: History note: commit 1234abc not in git log :: '
                                                '> **History** (commit 1234abc): it gave 0.93.']
