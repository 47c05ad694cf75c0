"latentnb.sinvad.humanstudy: ratings validation, rating form (headless), analysis on hand-made tables."
import numpy as np
import pandas as pd
import pytest
import torch

from latentnb.sinvad.humanstudy import (RATING_COLUMNS, RatingForm, RatingsError, Study, add_scores, attention_failures,
                                 collect_ratings, export_study, most_confusing, pairwise_table, simulate_ratings,
                                 validate_ratings)


def _row(**kw):
    r = dict(rater='r1', item='q000', method='sinvad', seed=0, source=3, target=5, source_score=3, target_score=3, seconds=2.0)
    r.update(kw); return r


def _study(n=6):
    items = pd.DataFrame(dict(item=[f'q{i:03d}' for i in range(n)], method=(['sinvad', 'fgsm', 'cw'] * n)[:n - 1] + ['real'],
                              seed=[i//3 for i in range(n)], source=[3]*n, target=[5]*n, reached=[True]*n))
    return Study(items, torch.rand(n, 1, 28, 28))


def test_validate_accepts_good_table():
    df = pd.DataFrame([_row(item=f'q{i}') for i in range(3)])
    out = validate_ratings(df)
    assert list(out.columns) == list(RATING_COLUMNS) and len(out) == 3


@pytest.mark.parametrize('bad, msg', [
    (dict(source_score=0), 'source_score must be an integer 1–5'),
    (dict(target_score=6), 'target_score must be an integer 1–5'),
    (dict(target_score=2.5), 'target_score must be an integer 1–5'),
    (dict(source_score='five'), 'source_score must be an integer 1–5'),
    (dict(method='pgd'), 'unknown method'),
    (dict(seconds=-1), 'seconds must be a number'),
    (dict(source=11), 'source must be a class 0–9'),
])
def test_validate_rejects_bad_rows_with_clear_messages(bad, msg):
    df = pd.DataFrame([_row(item='q1'), _row(item='q2', **bad)])
    with pytest.raises(RatingsError, match=msg) as e:
        validate_ratings(df)
    assert "row 1: rater='r1' item='q2'" in str(e.value)
    clean, rejected = validate_ratings(df, drop=True)
    assert len(clean) == 1 and len(rejected) == 1 and msg.split(' (')[0] in rejected['reason'].iloc[0]


def test_validate_rejects_duplicates_and_missing_columns():
    df = pd.DataFrame([_row(), _row(source_score=1)])
    with pytest.raises(RatingsError, match='duplicate answer'): validate_ratings(df)
    with pytest.raises(RatingsError, match=r"lacks column\(s\) \['method'\]"): validate_ratings(df.drop(columns='method'))
    assert len(validate_ratings(df, drop=True)[0]) == 1


def test_scores_hand_computed():
    df = add_scores(pd.DataFrame([_row(source_score=5, target_score=1), _row(source_score=2, target_score=4), _row(source_score=3, target_score=3)]))
    assert df['confusion'].tolist() == [1, 3, 5] and df['acceptability'].tolist() == [6, 6, 6]


def test_attention_failures():
    df = pd.DataFrame([_row(rater='a', method='real', source_score=5), _row(rater='b', method='real', source_score=2),
                       _row(rater='b', item='q1', method='real', source_score=1)])
    assert attention_failures(df).to_dict() == {'b': 2}


def test_form_saves_each_answer_and_resumes(tmp_path):
    st = _study()
    export_study(st, tmp_path)
    clock = iter(range(0, 100, 3))
    f = RatingForm(tmp_path, 'A', clock=lambda: next(clock))
    f.widget()
    f.submit(5, 1)
    assert len(pd.read_csv(tmp_path/'ratings'/'A.csv')) == 1          # saved at once
    f.submit(2, 4)
    with pytest.raises(ValueError, match='integer 1–5'): f.submit(3, 7)
    g = RatingForm(tmp_path, 'A')
    assert len(g.todo) == len(st.items) - 2 and g.current['item'] == st.items['item'][2]
    for _ in range(len(g.todo)): g.submit(3, 3)
    assert g.current is None
    with pytest.raises(RuntimeError, match='answered every question'): g.submit(3, 3)
    table = validate_ratings(collect_ratings(tmp_path))
    assert len(table) == len(st.items) and table['seconds'].iloc[0] == 3
    assert set(table['method']) == set(st.items['method'])


def test_analysis_on_simulated_table():
    st = _study(30)
    S = add_scores(validate_ratings(simulate_ratings(st.items, n_raters=8, seed=1)))
    assert S.attrs.get('SIMULATED') is True                                # the flag survives validation and scoring
    assert not add_scores(validate_ratings(pd.DataFrame([_row()]))).attrs.get('SIMULATED')   # and is not set on real tables
    t1 = pairwise_table(S, 'confusion')
    assert list(zip(t1['A'], t1['B'])) == [('sinvad', 'fgsm'), ('sinvad', 'cw'), ('fgsm', 'cw')]
    assert t1["Cliff's δ"].iloc[0] > 0.3                                    # simulated SINVAD more confusing
    mc = most_confusing(S)
    assert set(mc.columns) >= {'seed', 'most_confusing', 'p', 'significant'} and (mc['most_confusing'] == 'sinvad').mean() > 0.5


def test_export_writes_colour_images_as_rgb(tmp_path):
    "Grey studies export as 'L' PNGs, 3-channel ones (colour-mnist, CIFAR-10, SVHN) as RGB, each pixel as the tensor holds it"
    from PIL import Image
    st = _study(3); st.images = torch.rand(3, 3, 32, 32)
    export_study(st, tmp_path)
    with Image.open(tmp_path/'images'/'q001.png') as im:
        assert (im.mode, im.size) == ('RGB', (32, 32))
        assert np.array_equal(np.asarray(im), (st.images[1].numpy().transpose(1, 2, 0)*255).round().astype(np.uint8))
    g = _study(2); export_study(g, tmp_path/'grey')
    with Image.open(tmp_path/'grey'/'images'/'q000.png') as im: assert (im.mode, im.size) == ('L', (28, 28))


def test_build_study_attention_checks_use_the_datasets_classes():
    "An attention check asks about its own class and one other of the `n_classes` classes (26 for EMNIST letters)"
    from torch import nn
    from latentnb.sinvad.humanstudy import build_study
    from latentnb.generators.vae import MLPVAE
    torch.manual_seed(0)
    vae, clf = MLPVAE(4, 16, img_shape=(1, 8, 8)).eval(), nn.Sequential(nn.Flatten(), nn.Linear(64, 26)).eval()
    x = torch.rand(120, 1, 8, 8)
    with torch.no_grad(): y = clf(x).argmax(1)                    # labels the model gets right: every image can be a seed
    st = build_study(vae, clf, x, y, n_seeds=2, n_checks=20, pop=8, generations=4, cw_steps=2, n_classes=26, seed=0)
    real = st.items[st.items['method'] == 'real']
    assert len(real) == 20 and (real['target'] != real['source']).all() and real['target'].between(0, 25).all()
    assert real['target'].max() >= 10                              # not confined to the ten digits
