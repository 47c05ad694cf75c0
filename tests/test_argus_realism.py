"""The Argus realism instrument (latentnb.argus.realism, notebook 63): study folder, blinding, the form driven by its widgets,
crash-safe answers, resume, validation, and the analysis checked against scipy on a TEST FIXTURE of scripted answers
(planted preferences, used only to test the code: never ratings, never a result). Model-free: random images stand in for
generated inputs."""
import json

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats as sps

from latentnb.argus.realism import (RealismError, RealismForm, answers_path, append_answers, build_realism_study, check_answer,
                                    fig3_claims, load_realism_study, mutation_chain, pick_one, pick_originals, read_answers,
                                    realism_stats, save_realism_study, study_digest, study_folder)
from latentnb.config import load_config
from latentnb.paper import published_section
from latentnb.stats import cliffs_delta

METHODS = ('A', 'B', 'C', 'D', 'E')


def _study(n=4, methods=METHODS, seed=0):
    g = torch.Generator().manual_seed(seed)
    cands = {m: dict(x=torch.rand(n, 1, 28, 28, generator=g), failing=torch.arange(n) % 2 == 0, pred=torch.arange(n)) for m in methods}
    return build_realism_study(torch.rand(n, 1, 28, 28, generator=g), torch.arange(n), cands, seed=seed)


@pytest.fixture
def folder(tmp_path):
    return save_realism_study(_study(), tmp_path/'study')


def _fixture_answers(folder, n_raters=5, seed=0):
    "TEST FIXTURE: scripted raters with the planted preference A > B > C > D > E (a neighbour swap now and then); not ratings"
    rng, key = np.random.default_rng(seed), load_realism_study(folder).key.set_index('image').method
    for r in range(n_raters):
        f = RealismForm(folder, f'fixture-{r}')
        while f.current is not None:
            order = list(METHODS)
            if rng.random() < 0.3:
                j = int(rng.integers(0, len(order) - 1)); order[j], order[j + 1] = order[j + 1], order[j]
            rank = [order.index(key[i]) + 1 for i in f.study.trial_images(f.current)]
            f.submit(rank, [int(np.clip(5 - (q + 1)//2 + rng.integers(-1, 1), 1, 4)) for q in rank])


def test_study_roundtrip_and_blinding(folder):
    st = load_realism_study(folder)
    assert study_digest(st) == study_digest(_study())
    trials = pd.read_csv(folder/'trials.csv')
    assert list(trials.columns) == ['trial', 'position', 'image']              # what raters see names no method
    key = st.key.set_index('image')
    shown = [key.loc[st.trial_images(t), 'method'].tolist() for t in range(st.n_trials)]
    assert all(sorted(s) == list(METHODS) for s in shown) and shown != [list(METHODS)]*st.n_trials   # every method once, shuffled
    by_id = key.sort_index().method.tolist()
    assert by_id[:len(METHODS)] != list(METHODS)                               # ids do not follow the methods' order
    with pytest.raises(FileExistsError, match='already holds a realism study'): save_realism_study(_study(), folder)


def test_tampered_study_is_refused(folder):
    k = folder/'trials.csv'; k.write_text(k.read_text().replace(',1,', ',2,', 1))
    with pytest.raises(RealismError, match='files differ'): load_realism_study(folder)


def test_widget_clicks_save_and_resume(folder):
    ticks = iter(range(0, 1000, 7))
    form = RealismForm(folder, 'r01', clock=lambda: next(ticks)); form.widget()
    for j, r in enumerate([2, 2, 3, 4, 5]): form.rank_w[j].value = r
    for w in form.score_w: w.value = 3
    form.submit_btn.click()
    assert 'rank 2 is given to images #1, #2' in form.msg.value and 'rank(s) [1] are unused' in form.msg.value
    assert not form.path.exists() and form.current == 0
    form.rank_w[0].value = 1; form.score_w[4].value = 0
    form.submit_btn.click()
    assert 'image(s) #5 have none' in form.msg.value and not form.path.exists()
    form.score_w[4].value = 1; form.submit_btn.click()
    rows = [json.loads(l) for l in form.path.read_text().splitlines()]
    assert [r['rank'] for r in rows] == [1, 2, 3, 4, 5] and [r['score'] for r in rows] == [3, 3, 3, 3, 1]
    assert {r['seconds'] for r in rows} == {7} and {r['trial'] for r in rows} == {0}
    assert form.current == 1 and [w.value for w in form.rank_w] == [0]*5
    again = RealismForm(folder, 'r01')                                          # a new session resumes
    assert again.todo == [1, 2, 3]
    for _ in range(3): again.submit([5, 4, 3, 2, 1], [1, 2, 3, 4, 4])
    assert RealismForm(folder, 'r01').current is None
    with pytest.raises(RealismError, match='answered all 4 trials'): again.submit([1, 2, 3, 4, 5], [1]*5)


def test_a_torn_or_bad_file_raises_clearly(folder):
    form = RealismForm(folder, 'r02'); form.submit([1, 2, 3, 4, 5], [4, 3, 2, 1, 1])
    with open(form.path, 'a') as f: f.write('{"rater": "r02", "trial": 1, "ima')  # a crash in the middle of a line
    with pytest.raises(RealismError, match=r'r02.jsonl: 1 unreadable line\(s\):\n  line 6: not JSON'): read_answers(folder)
    with pytest.raises(RealismError, match='line 6: not JSON'): RealismForm(folder, 'r02')
    lines = form.path.read_text().splitlines()[:5]
    form.path.write_text('\n'.join(lines[:4]) + '\n')
    with pytest.raises(RealismError, match=r'trial 0 \(lines 1–4\): 4 of its 5 images answered'): read_answers(folder)


def test_append_is_one_write(tmp_path, monkeypatch):
    import os
    calls = []
    real = os.write
    monkeypatch.setattr(os, 'write', lambda fd, b: calls.append(len(b)) or real(fd, b))
    rows = [dict(rater='x', trial=0, image=f'c{j}', position=j, rank=j, score=1, seconds=0.5, answered_at='t') for j in range(1, 8)]
    append_answers(tmp_path/'x.jsonl', rows)
    assert len(calls) == 1 and len((tmp_path/'x.jsonl').read_text().splitlines()) == 7


@pytest.mark.parametrize('ranks,scores,msg', [
    ([1, 2, 3], [1, 1, 1], 'expected 5 of each'),
    ([1, 2, 3, 4, None], [1]*5, 'image(s) #5 have none'),
    ([1, 2, 3, 4, 6], [1]*5, 'from 1 (most realistic) to 5'),
    ([1, 1, 2, 2, 3], [1]*5, 'rank 1 is given to images #1, #2; rank 2 is given to images #3, #4; rank(s) [4, 5] are unused'),
    ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], '1 (Poor) to 4 (Excellent)'),
    ([1, 2, 3, 4, 5], [1, 2, 3, 4, True], '1 (Poor) to 4 (Excellent)'),
])
def test_check_answer_errors(ranks, scores, msg):
    with pytest.raises(RealismError) as e: check_answer(ranks, scores, 5)
    assert msg in str(e.value)


def test_bad_rater_id(folder):
    for bad in ('', '../x', 'a b', 7):
        with pytest.raises(RealismError, match='rater id'): answers_path(folder, bad)


def test_analysis_matches_scipy_on_a_fixture(folder):
    _fixture_answers(folder)
    ans = read_answers(folder)
    assert len(ans) == 5*4*len(METHODS) and set(ans.method) == set(METHODS)
    st = realism_stats(ans)
    assert st['per_method'].index.tolist() == list(METHODS)                     # the planted order
    blocks = ans.pivot_table(index=['rater', 'trial'], columns='method', values='rank')
    ref = sps.friedmanchisquare(*[blocks[m] for m in METHODS])
    assert np.isclose(st['friedman']['statistic'], ref.statistic) and np.isclose(st['friedman']['p'], ref.pvalue)
    assert np.isclose(st['friedman']['kendall_w'], ref.statistic/(len(blocks)*(len(METHODS) - 1)))
    pw = st['pairwise'].set_index(['metric', 'a', 'b'])
    w = sps.wilcoxon(blocks['A'], blocks['E'])
    assert np.isclose(pw.loc[('rank', 'A', 'E'), 'p'], w.pvalue) and np.isclose(pw.loc[('rank', 'A', 'E'), 'cliffs_delta'], cliffs_delta(blocks['A'], blocks['E']))
    assert pw.loc[('rank', 'A', 'E'), 'cliffs_delta'] < -0.9 and pw.loc[('rank', 'A', 'E'), 'p_holm'] < 0.01
    assert (pw.p_holm.dropna() >= pw.p.dropna() - 1e-12).all()
    assert np.allclose(st['per_method'].filter(like='share').sum(axis=1), 1)
    assert st['raters'] == 5 and st['trials'] == 20


def test_no_ratings_means_no_result(folder):
    assert read_answers(folder).empty
    with pytest.raises(RealismError, match='no answers to analyse'): realism_stats(read_answers(folder))
    rows = fig3_claims(None, published_section('2.5 Manual realism'), ['DLFuzz', 'DeepXplore'])
    assert [r['verdict'] for r in rows] == ['not comparable']*5 and {r['note'] for r in rows} == {'no ratings collected'}
    assert {r['why'] for r in rows} == {'scale (a study with ratings)'}


def _ranked_stats(per_rater):
    "A `realism_stats`-shaped dict from per-rater mean ranks (rows: raters, columns: methods), enough for `fig3_claims`"
    pr = pd.DataFrame(per_rater)
    per = pd.DataFrame(dict(mean_rank=pr.mean(), mean_score=3.5)).sort_values('mean_rank')
    return dict(per_method=per, per_rater=pr[per.index.tolist()], raters=len(pr), trials=len(pr))


def test_ranking_rows_test_the_raters_not_the_means():
    text, base = published_section('2.5 Manual realism'), ['DLFuzz', 'DeepXplore']
    ranks = lambda n: {'Argus-0.1': [1.0]*n, 'Argus-0.2': [2.0]*n, 'Argus-0.3': [3.0]*n, 'DLFuzz': [4.0]*n, 'DeepXplore': [5.0]*n}
    rows = fig3_claims(_ranked_stats(ranks(8)), text, base)
    assert [r['verdict'] for r in rows[:2]] == ['holds', 'holds'] and 'sign test' in rows[0]['note']
    few = fig3_claims(_ranked_stats(ranks(3)), text, base)       # first by the means, but 3 raters cannot decide it
    assert [r['verdict'] for r in few[:2]] == ['not comparable']*2 and few[0]['why'] == 'scale (more raters)'
    swapped = ranks(8); swapped['Argus-0.1'], swapped['Argus-0.2'] = swapped['Argus-0.2'], swapped['Argus-0.1']
    assert fig3_claims(_ranked_stats(swapped), text, base)[0]['verdict'] == 'does not hold'


def test_study_folder_is_configurable(tmp_path, monkeypatch):
    monkeypatch.delenv('LATENTNB_DATASET', raising=False)
    monkeypatch.setenv('LATENTNB_ARGUS_REALISM_DIR', str(tmp_path/'mine'))
    assert study_folder() == tmp_path/'mine'
    monkeypatch.delenv('LATENTNB_ARGUS_REALISM_DIR')
    assert study_folder(load_config('quick', seed_all=False)).parts[-2:] == ('studies', 'argus_realism')
    ci = study_folder(load_config('ci', seed_all=False))
    assert ci.exists() and 'argus-realism-' in ci.name                          # ci: a new temporary folder
    monkeypatch.setenv('LATENTNB_DATASET', 'colour-mnist')                      # another dataset: never the committed (MNIST) study
    assert study_folder(load_config('quick', seed_all=False)).parts[-2:] == ('studies', 'argus_realism-colour-mnist')


def test_candidate_helpers():
    g = torch.Generator().manual_seed(0)
    y = torch.tensor([0, 1, 2, 0, 1, 2, 3])
    assert y[pick_originals(y, y != 1, 4)].tolist() == [0, 2, 3, 0]
    with pytest.raises(RealismError, match='enlarge the pool'): pick_originals(y, y == 3, 2)
    x = torch.rand(3, 1, 28, 28, generator=g)
    ch = mutation_chain(x, torch.tensor([0, 1, 2]), budget=6, steps=3)
    assert ch['x'].shape == (18, 1, 28, 28) and ch['seed_idx'].tolist() == [0]*6 + [1]*6 + [2]*6
    class Zero(torch.nn.Module):
        def forward(self, x): return torch.nn.functional.one_hot(torch.zeros(len(x), dtype=torch.long), 10).float()
    p = pick_one(ch, Zero(), 3)
    assert p['failing'].tolist() == [False, True, True] and p['pred'].tolist() == [0, 0, 0]


def test_colour_study_round_trip(tmp_path):
    "3×32×32 colour images are saved as RGB PNGs and read back exactly (8-bit); grey ones stay grey"
    g = torch.Generator().manual_seed(0)
    cands = {m: dict(x=torch.rand(3, 3, 32, 32, generator=g), failing=torch.zeros(3, dtype=torch.bool), pred=torch.arange(3)) for m in 'ABC'}
    st = build_realism_study(torch.rand(3, 3, 32, 32, generator=g), torch.arange(3), cands)
    save_realism_study(st, tmp_path/'s')
    ld = load_realism_study(tmp_path/'s')
    assert ld.originals.shape == (3, 3, 32, 32) and study_digest(ld) == study_digest(st)
    assert all(torch.equal(ld.images[i], st.images[i]) for i in st.images)
    save_realism_study(_study(n=2, methods='ABC'), tmp_path/'g')
    assert load_realism_study(tmp_path/'g').originals.shape == (2, 1, 28, 28)
