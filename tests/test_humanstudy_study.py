"SINVAD's published study format: the reader on small files made in that format (digits and EMNIST letters), its exclusion rules, bad rows, the vendored copy's sha256, Tables 1-2 against the authors' printed numbers, and the rating widget's round trip."
import json

import numpy as np
import pandas as pd
import pytest

from latentnb.config import load_config
from latentnb.data import ChecksumError
from latentnb.sinvad.humanstudy import (RatingsError, read_sinvad_study, sinvad_files, study_tables, to_sinvad_trials, RatingForm,
                                 collect_ratings, RATING_COLUMNS, SINVAD_FILES)


def _trial(uid, expr, c1, c2, rt, phase='TEST'):
    return dict(uid=uid, response_no=0, unix_time=1610506337784,
                response=json.dumps(dict(phase=phase, expr=expr, c1_confidence=c1, c2_confidence=c2, rt=rt)))


def _write(tmp_path, rows, meta):
    pd.DataFrame(rows).to_csv(tmp_path/'trials.csv', index=False)
    pd.DataFrame(meta, columns=['ExpNo', 'TargetClass', 'SeedClass']).to_csv(tmp_path/'meta.csv', index=False)
    return tmp_path/'trials.csv', tmp_path/'meta.csv'


def test_digits_rules_and_scores(tmp_path):
    rows = [_trial('pilot', f'E001_{m}', 0, 0, 1000) for m in ('SINVAD', 'FGSM', 'CW')] \
         + [_trial('u1', 'E001_SINVAD', 3, 1, 4000), _trial('u1', 'E001_FGSM', 0, 4, 2000), _trial('u1', 'E002_CW', 4, 0, 31000),
            _trial('u1', 'E002_real', 2, 2, 1000, phase='TRAINING')] \
         + [_trial('u2', 'E001_CW', 1, 1, 1000), _trial('u2', 'E002_CW', 1, 1, 1000)]
    tr, me = _write(tmp_path, rows, [(1, 9, 7), (2, 3, 5)])
    r = read_sinvad_study(tr, me, min_answers=3)
    assert list(r.columns) == list(RATING_COLUMNS)
    assert r['rater'].unique().tolist() == ['u1']                      # pilot and u2 (2 answers) dropped, TRAINING ignored
    # experiment 1: source 7, target 9; 7 sorts first, so c1 is the source
    assert r.loc[0, ['source', 'target', 'source_score', 'target_score']].tolist() == [7, 9, 4, 2]
    # experiment 2: source 5, target 3; 3 sorts first, so c1 is the target
    assert r.loc[2, ['method', 'source', 'target', 'source_score', 'target_score', 'seconds']].tolist() == ['cw', 5, 3, 1, 5, 31.0]
    t = study_tables(r)
    assert t['acceptability']['sinvad'] == 6 and np.isnan(t['seconds'].get('cw', np.nan))   # Table 2 ignores answers of 30 s or more
    assert read_sinvad_study(tr, me, min_answers=2, drop_pilot=False)['rater'].nunique() == 3


def test_emnist_letters(tmp_path):
    rows = [_trial('p', 'E001_real', 0, 4, 900)] + [_trial('u', 'E001_SINVAD', 2, 3, 5000), _trial('u', 'E002_FGSM', 4, 0, 3000)]
    tr, me = _write(tmp_path, rows, [(1, 'l', 'i'), (2, 'h', 'd')])
    r = read_sinvad_study(tr, me, min_answers=1)
    assert r['source'].tolist() == ['i', 'd'] and r['target'].tolist() == ['l', 'h']
    assert r['source_score'].tolist() == [3, 5] and r['target_score'].tolist() == [4, 1]


def test_bad_rows_named_or_returned(tmp_path):
    rows = [_trial('u', 'E001_SINVAD', 1, 1, 1000), _trial('u', 'E009_SINVAD', 1, 1, 1000), _trial('u', 'E001_PGD', 1, 1, 1000),
            _trial('u', 'E001_CW', 7, 1, 1000), dict(uid='u', response_no=0, unix_time=0, response='{not json')]
    tr, me = _write(tmp_path, rows, [(1, 9, 7)])
    with pytest.raises(RatingsError, match=r"(?s)4 bad row\(s\).*line 3: uid='u': experiment 9 is not in the metadata"):
        read_sinvad_study(tr, me)
    ok, bad = read_sinvad_study(tr, me, min_answers=1, drop_pilot=False, drop=True)
    assert len(ok) == 1 and bad['line'].tolist() == [3, 4, 5, 6]
    assert 'unknown method' in bad['reason'][1] and 'integers 0–4' in bad['reason'][2] and 'not JSON' in bad['reason'][3]


def test_missing_columns(tmp_path):
    tr, me = _write(tmp_path, [_trial('u', 'E001_SINVAD', 1, 1, 1000)], [(1, 9, 7)])
    with pytest.raises(RatingsError, match=r"lacks column\(s\) \['ExpNo', 'TargetClass', 'SeedClass'\]"):
        read_sinvad_study(tr, tr)


def test_vendored_study_checksum_and_tables(tmp_path):
    cfg = load_config('ci')
    tr, me = sinvad_files('mnist', cfg)
    r = read_sinvad_study(tr, me)
    assert r['rater'].nunique() == 302 and len(r) == 9966
    t = study_tables(r)
    authors = dict(sinvad=6.1219, fgsm=6.1467, cw=6.2407, real=6.2351)     # RQ2.ipynb (coinse/SINVAD)
    assert np.allclose(t['acceptability'][list(authors)], list(authors.values()), atol=6e-5)
    assert np.allclose(t['seconds'][['sinvad', 'fgsm', 'cw', 'real']], [7.188, 6.879, 6.675, 6.129], atol=6e-4)
    assert t['most_confusing_counts'].loc['sinvad'].tolist() == [23, 30]
    bad = tmp_path/'copy.csv'; bad.write_bytes(tr.read_bytes() + b'\n')
    from latentnb.data import verify_sha256
    with pytest.raises(ChecksumError): verify_sha256(bad, SINVAD_FILES[tr.name])
    with pytest.raises(FileNotFoundError, match='no vendored SINVAD file'): sinvad_files('cifar', cfg)


def test_widget_answers_round_trip(tmp_path):
    folder = tmp_path/'study'; (folder/'images').mkdir(parents=True)
    key = pd.DataFrame(dict(item=['q000', 'q001', 'q002', 'q003'], method=['sinvad', 'fgsm', 'real', 'cw'], seed=[412, 412, 77, 412],
                            source=[7, 7, 3, 7], target=[9, 9, 8, 9], reached=[True, True, False, True]))
    key.to_csv(folder/'key.csv', index=False)
    key[['item', 'source', 'target']].assign(image=[f'images/{i}.png' for i in key.item]).to_csv(folder/'questions.csv', index=False)
    for rater, answers in (('A', [(3, 4), (5, 1), (5, 1), (4, 2)]), ('B', [(2, 2), (4, 3), (5, 2), (5, 1)])):
        t = iter(np.arange(0, 100, 1.5))
        form = RatingForm(folder, rater, clock=lambda: float(next(t)))
        for a in answers: form.submit(*a)
    saved = collect_ratings(folder)
    trials, meta = to_sinvad_trials(saved)
    assert trials['response'].map(lambda s: json.loads(s)['expr']).str.fullmatch(r'E\d{3}_(SINVAD|FGSM|CW|real)').all()
    trials.to_csv(tmp_path/'t.csv', index=False); meta.to_csv(tmp_path/'m.csv', index=False)
    back = read_sinvad_study(tmp_path/'t.csv', tmp_path/'m.csv', min_answers=1, drop_pilot=False)
    expect = saved.assign(seed=saved['seed'].map(dict(zip(meta['seed'], meta['ExpNo']))))
    assert back.drop(columns='item').values.tolist() == expect.drop(columns='item').values.tolist()
    with pytest.raises(RatingsError, match='several source/target pairs'):
        to_sinvad_trials(saved.assign(target=[9, 8, 8, 9, 9, 8, 8, 9]))
