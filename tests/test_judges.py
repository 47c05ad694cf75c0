"Plain behaviour of latentnb.judges: architectures, specs, the data rule, the ensemble API and its validity rule (untrained members; no checkpoints)"
import dataclasses

import numpy as np
import pytest
import torch

from latentnb.config import load_config
from latentnb.judges import (JUDGE_ARCHS, JUDGE_SPECS, JudgeResNet, WideMLP, SepCNN, Judges, judge_split, split_table,
                             judge_spec, judge_agreement, judge_controls, CONTROL_KINDS)
from latentnb.zoo import ARCHS, PAIRS, REFERENCE


@pytest.fixture(scope='module')
def ci(): return load_config('ci', seed_all=False)


@pytest.mark.parametrize('cls', [JudgeResNet, WideMLP, SepCNN])
def test_logits_and_features(cls):
    m = cls().eval(); x = torch.rand(3, 1, 28, 28)
    assert m(x).shape == (3, 10) and m.features(x).shape == (3, m.num_features)
    assert torch.allclose(m.head(m.features(x)), m(x))


def test_specs_differ_from_the_zoo():
    zoo = [s for p in PAIRS.values() for s in (p.a, p.b)] + [REFERENCE]
    assert len(JUDGE_SPECS) >= 3 and len({s.arch for s in JUDGE_SPECS}) == len(JUDGE_SPECS)
    assert not {s.arch for s in JUDGE_SPECS} & ({s.arch for s in zoo} | set(ARCHS))
    assert not {s.seed for s in JUDGE_SPECS} & {s.seed for s in zoo}
    a, b = JUDGE_SPECS[0].build(), JUDGE_SPECS[0].build()           # seeded builds are identical
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_split_is_disjoint_and_from_the_end(ci):
    s = judge_split('mnist', ci)
    parts = [set(s[k].tolist()) for k in ('train', 'controls', 'calibration')]
    assert sum(map(len, parts)) == len(set().union(*parts))
    B = ci.budget('judges')
    assert (len(s['controls']), len(s['calibration'])) == (B.n_ctrl, B.n_cal) and s['positions']['calibration'][1] == s['N']
    t = split_table('mnist', ci)
    assert (t.shared_with_filter == 0).all() and (t.shared_with_zoo == 0).all()   # ci: the zoo trains on the first 1,000


def test_fashion_quick_avoids_the_zoo():
    t = split_table('fashion-mnist', load_config('quick', seed_all=False))
    assert (t.shared_with_zoo == 0).all() and (t.shared_with_filter == 0).all()


def test_spec_records_the_data(ci):
    sp = judge_spec(JUDGE_SPECS[0], 'mnist', ci)
    assert sp['positions'] == judge_split('mnist', ci)['positions']['train'] and sp['model']['arch'] == JUDGE_SPECS[0].arch


def test_split_errors():
    cfg = load_config('ci', seed_all=False)
    cfg.budgets = {**cfg.budgets, 'judges': {**cfg.budgets['judges'], 'n_cal': {p: 7000 for p in ('ci', 'quick', 'paper')}}}
    with pytest.raises(ValueError, match='leave'): judge_split('mnist', cfg)


@pytest.fixture(scope='module')
def judges(ci):
    specs = {f'mnist-judge-{s.arch.lower()}': s for s in JUDGE_SPECS}
    return Judges('mnist', {k: s.build().eval() for k, s in specs.items()}, specs, ci)


def test_api(judges):
    x = torch.rand(7, 1, 28, 28)
    p = judges.predict_proba(x)
    assert p.shape == (7, 10) and torch.allclose(p.sum(1), torch.ones(7), atol=1e-5)
    assert torch.equal(judges.labels(x), p.argmax(1))
    a = judges.agreement(x)
    assert a.shape == (7,) and set(np.round(a*3).astype(int)) <= {0, 1, 2, 3}   # the mean's label may be no member's
    f = judges.features(x)
    assert f.shape == (7, sum(m.num_features for m in judges.members.values())) and torch.allclose(f.norm(dim=1), torch.ones(7), atol=1e-4)
    assert judges.valid(x).dtype == bool and judges.valid((x*255).to(torch.uint8)).shape == (7,)
    d = judges.describe()
    assert list(d.index) == list(judges.members) and {'architecture', 'data', 'n_train', 'seed', 'test_accuracy'} <= set(d.columns)


def test_rule_is_calibrated(judges):
    "The real-digit rule: on its own calibration images each stage rejects at most about q; the whole rule keeps ≥ 1 − 3q of them"
    from latentnb.data import load_dataset
    xc = load_dataset('mnist', 'train')[0][judges.split['calibration']]
    v = judges.verdicts(xc, judges.calibration)
    q = judges.q
    for k in ('agreement_ok', 'top_p_ok', 'mahalanobis_ok'): assert v[k].mean() >= 1 - q - 1e-9
    assert v.valid.mean() >= 1 - 3*q - 1e-9


def test_identical_members_agree_perfectly(ci):
    m = JUDGE_SPECS[2].build().eval()
    specs = {f'copy{i}': JUDGE_SPECS[2] for i in range(3)}
    j = Judges('mnist', {k: m for k in specs}, specs, ci)
    x = torch.rand(50, 1, 28, 28)
    ag = judge_agreement(j, x)
    assert ag['unanimous'] == 1 and (ag['pairwise'].to_numpy() == 1).all() and (j.agreement(x) == 1).all()


def test_controls_table(judges):
    t = judge_controls(judges, reference=False)
    assert list(t.columns[:len(CONTROL_KINDS)]) == list(CONTROL_KINDS)
    assert ((t[list(CONTROL_KINDS)] >= 0) & (t[list(CONTROL_KINDS)] <= 1)).all().all()
    assert len(t) == len(judges.members) + 2
    with pytest.raises(ValueError, match='asked to judge'): judge_controls(judges, 'fashion-mnist', reference=False)


# --- image shapes ---
from latentnb.judges import member_outputs


@pytest.mark.parametrize('cls', [JudgeResNet, WideMLP, SepCNN])
def test_members_build_for_the_shape(cls):
    m = cls(img_shape=(3, 32, 32), n_classes=26).eval(); x = torch.rand(3, 3, 32, 32)
    assert m(x).shape == (3, 26) and m.features(x).shape == (3, m.num_features) and m.img_shape == (3, 32, 32)
    with pytest.raises(ValueError, match=f'{cls.__name__}: image shape'): cls(img_shape=(3, 30, 30))


def test_default_members_are_unchanged():
    assert WideMLP().body[1].in_features == 784 and WideMLP(side=32).body[1].in_features == 1024
    assert JudgeResNet().stem[0].in_channels == 1 and SepCNN().body[0].in_channels == 1
    assert JUDGE_SPECS[0].build().img_shape == (1, 28, 28) and JUDGE_SPECS[0].build((3, 32, 32)).img_shape == (3, 32, 32)
    assert 'img_shape' not in judge_spec(JUDGE_SPECS[0], 'mnist', load_config('ci', seed_all=False))


def test_empty_outputs_have_the_class_count():
    p, f = member_outputs(SepCNN(n_classes=26, img_shape=(3, 32, 32)).eval(), torch.zeros(0, 3, 32, 32))
    assert p.shape == (0, 26) and f.shape == (0, 128)


def test_colour_judges(ci):
    "Untrained members of colour-mnist's shape: the ensemble API, its calibration and the controls work on 3×32×32 images"
    specs = {f'colour-mnist-judge-{s.arch.lower()}': s for s in JUDGE_SPECS}
    j = Judges('colour-mnist', {k: s.build((3, 32, 32), 10).eval() for k, s in specs.items()}, specs, ci)
    x = torch.rand(5, 3, 32, 32)
    assert j.predict_proba(x).shape == (5, 10) and j.valid(x).shape == (5,)
    assert j.rule() is j.calibration                                                 # nobody rated colour digits: the real-digit rule
    with pytest.raises(ValueError, match='no people rated'): j.people_rule()
    assert j.people_agreement() is None
    t = judge_controls(j, reference=False)
    assert len(t) == len(j.members) + 2 and ((t[list(CONTROL_KINDS)] >= 0) & (t[list(CONTROL_KINDS)] <= 1)).all().all()


# --- checked against people (GIFTbench's MNIST MTurk study) ---
import dataclasses as _dc
import shutil

import pandas as pd
from sklearn.metrics import cohen_kappa_score

from latentnb.data import ChecksumError
from latentnb.judges import (STUDY_CSV, STUDY_DIR, STUDY_FILES, STUDY_IMAGES, PEOPLE_STAGES, PEOPLE_RULES, RULES, agreement_table,
                             human_labels, human_study_images, kappa_grid, people_check, people_split, rater_agreement, study_file)


@pytest.fixture(scope='module')
def study(ci):
    x, meta = human_study_images(ci)
    return x, meta, human_labels(meta, cfg=ci)


def _copy_study(ci, root):
    "The vendored study files under a fresh project root (`root/data/studies/giftbench/`)"
    for name in STUDY_FILES:
        dst = root/'data'/STUDY_DIR/name; dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(study_file(name, ci), dst)
    return _dc.replace(ci, root=root)


def test_study_pins_match_the_giftbench_reader():
    from latentnb.giftbench import MTURK_FILES
    assert STUDY_FILES[STUDY_CSV] == MTURK_FILES[STUDY_CSV]


def test_study_loader_checks_sha256(ci, tmp_path):
    cfg = _copy_study(ci, tmp_path)
    x, meta = human_study_images(cfg)
    assert x.shape == (162, 1, 28, 28) and x.dtype == torch.float32 and len(meta) == 162 and meta.id.is_unique
    p = tmp_path/'data'/STUDY_DIR/STUDY_IMAGES
    b = bytearray(p.read_bytes()); b[-1] ^= 1; p.write_bytes(bytes(b))
    with pytest.raises(ChecksumError, match='does not match the pinned'): human_study_images(cfg)


def test_study_loader_says_how_to_get_a_missing_file(ci, tmp_path):
    cfg = _copy_study(ci, tmp_path)
    (tmp_path/'data'/STUDY_DIR/STUDY_IMAGES).unlink()
    with pytest.raises(FileNotFoundError) as e: human_study_images(cfg)
    msg = str(e.value)
    assert 'mnist_study_images_even_ids.npz is missing' in msg and STUDY_FILES[STUDY_IMAGES] in msg
    assert '../shared/studies/giftbench/' in msg and 'github.com/deeptestai/genai_tigs' in msg
    with pytest.raises(KeyError, match='no vendored study file'): study_file('human_study_SVHN.csv', cfg)


def test_join_by_id(study, ci):
    from latentnb.giftbench import mturk_file, read_mturk
    x, meta, L = study
    assert L.id.tolist() == meta.id.tolist() and len(L) == len(x)
    assert (L.human.isna() == ~L.agreed).all() and (L.human[L.agreed] == L.valid_1[L.agreed]).all()
    assert 0 < (~L.agreed).sum() < L.agreed.sum()
    m = read_mturk(mturk_file('MNIST', ci)).assign(id=lambda d: d.id.astype(int)).set_index('id').loc[L.id]   # Table III's reader
    assert (m.invalid_1.to_numpy() == ~L.valid_1.to_numpy()).all() and (m.invalid_2.to_numpy() == ~L.valid_2.to_numpy()).all()


def test_join_refuses_a_wrong_match(study, ci, tmp_path):
    _, meta, _ = study
    with pytest.raises(ValueError, match='differ from their CSV row'): human_labels(meta.assign(step='low'), cfg=ci)
    with pytest.raises(KeyError, match='have no row'): human_labels(meta.assign(id=meta.id + 10**6), cfg=ci)
    d = pd.read_csv(study_file(STUDY_CSV, ci), dtype=str, keep_default_na=False)
    i = d.index[(d['Valid Human 1'] == '0') & (d['Valid Human 2'] == '0') & d.ID.astype(int).isin(meta.id)][0]
    d.loc[i, 'Validity?'] = 'no'                                            # the released summary contradicts both raters
    d.to_csv(tmp_path/'bad.csv', index=False)
    with pytest.raises(ValueError, match='contradicts both raters'): human_labels(meta, tmp_path/'bad.csv')
    d.loc[i, 'Valid Human 1'] = '2'
    d.to_csv(tmp_path/'bad.csv', index=False)
    with pytest.raises(ValueError, match='not all 0/1'): human_labels(meta, tmp_path/'bad.csv')


def test_rater_agreement_is_sklearns(ci):
    t = rater_agreement(cfg=ci); tot = t.iloc[-1]
    d = pd.read_csv(study_file(STUDY_CSV, ci))
    v1, v2 = d['Valid Human 1'] == 0, d['Valid Human 2'] == 0
    assert (tot.tool, tot.step, tot.n) == ('all', 'all', len(d))
    assert np.isclose(tot.kappa, cohen_kappa_score(v1, v2)) and np.isclose(tot.agreement, (v1 == v2).mean())
    assert t[t.step != 'all'].n.sum() == len(d)


def test_agreement_table():
    d = pd.DataFrame(dict(tool=['vae']*4 + ['sd']*4, step=['low', 'high']*4, a=[1, 1, 0, 0, 1, 0, 1, 0], b=[1, 0, 0, 0, 1, 0, 1, 1]))
    t = agreement_table(d.astype({'a': bool, 'b': bool}), 'a', 'b')
    assert t[['tool', 'step']].values.tolist()[-3:] == [['sd', 'high'], ['sd', 'all'], ['all', 'all']]
    tot = t.iloc[-1]
    assert tot.n == 8 and tot.agreement == 0.75 and np.isclose(tot.kappa, cohen_kappa_score(d.a, d.b)) and tot.accept_a == 0.5


@pytest.mark.parametrize('frac', [0.3, 0.5, 0.7])
def test_people_split_never_overlaps(study, frac):
    L = study[2]; gt = L[L.agreed].reset_index(drop=True)
    seen = set()
    for seed in range(20):
        cal, held = people_split(gt, frac, seed)
        assert not set(cal) & set(held) and len(cal) + len(held) == len(gt) and set(cal) | set(held) == set(range(len(gt)))
        part = gt.assign(c=np.isin(np.arange(len(gt)), cal)).groupby(['tool', 'human']).c.agg(['sum', 'size'])
        assert ((part['sum'] - frac*part['size']).abs() <= 0.5 + 1e-9).all()          # stratified by tool and human label
        seen.add(tuple(cal))
    assert len(seen) == 20 and np.array_equal(people_split(gt, frac, 3)[0], people_split(gt, frac, 3)[0])


def test_kappa_grid_is_sklearns():
    g = np.random.default_rng(1)
    P, h = g.random((3, 4, 30)) < 0.5, g.random(30) < 0.7
    k, po = kappa_grid(P, h)
    assert np.allclose(k, [[cohen_kappa_score(h, p) for p in r] for r in P]) and np.allclose(po, (P == h).mean(-1))
    assert kappa_grid(np.ones((1, 5), bool), np.ones(5, bool))[0][0] == 0      # undefined (one label only): 0


def test_calibrate_to_people_is_an_option(judges):
    x = torch.rand(40, 1, 28, 28); s = judges.scores(x)
    h = s.mahalanobis.to_numpy() < np.median(s.mahalanobis)                  # people who follow the distance
    before = dict(judges.calibration)
    c = judges.calibrate_to_people(s, h)
    assert judges.calibration == before and 'rule' not in before                  # the default rule is untouched
    assert c['rule'] == 'people: three stages' and c['n_people'] == 40 and set(PEOPLE_STAGES) <= set(c)
    assert c['kappa_fit'] >= kappa_grid(judges.apply_rule(s, judges.calibration).valid.to_numpy()[None], h)[0][0] - 1e-12
    assert c['kappa_fit'] == 1.0                                                   # the distance stage alone separates them
    assert (judges.valid(x, calibration=c) == judges.apply_rule(s, c).valid.to_numpy()).all()
    assert (judges.valid(x) == judges.apply_rule(s).valid.to_numpy()).all()
    only = judges.calibrate_to_people(s, h, stages=('top_p',))
    assert only['agreement'] == before['agreement'] and only['mahalanobis'] == before['mahalanobis']


def test_people_check_scores_only_held_out_images(judges, study, monkeypatch):
    x, _, L = study
    fit, scored = [], []
    cal_fn, one_fn, rule_fn = judges.calibrate_to_people, judges.fit_people_rule, judges.apply_rule
    monkeypatch.setattr(judges, 'calibrate_to_people', lambda s, h, st: fit.append(set(s.index)) or cal_fn(s, h, st))
    monkeypatch.setattr(judges, 'fit_people_rule', lambda s, h: fit.append(set(s.index)) or one_fn(s, h))
    fitted = lambda c: c is not None and 'rule' in c                                 # a rule fitted to people (not the real-digit one)
    monkeypatch.setattr(judges, 'apply_rule', lambda s, c=None: (scored.append(set(s.index)) if fitted(c) else None) or rule_fn(s, c))
    r = people_check(judges, x, L, n_splits=5)
    assert len(fit) == len(scored) == 10 and all(not (f & t) for f, t in zip(fit, scored))   # both fitted rules, every split
    assert all(len(f | t) == int(L.agreed.sum()) for f, t in zip(fit, scored))
    assert set(r['held_out'].rule) == set(PEOPLE_RULES) and len(r['thresholds']) == 5
    assert (r['thresholds'].n_held_out == [len(t) for t in scored[::2]]).all()


def test_fit_people_rule_accepts_the_peoples_share(judges):
    x = torch.rand(40, 1, 28, 28); s = judges.scores(x)
    k = list(judges.members)[1]
    h = s[f'mahalanobis:{k}'].to_numpy() < np.quantile(s[f'mahalanobis:{k}'], 0.7)   # people who follow one member's distance
    o = judges.fit_people_rule(s, h)
    assert o['rule'] == PEOPLE_RULES[2] and o['kappa_fit'] == 1.0 and abs(o['share'] - h.mean()) < 1e-12
    v = judges.apply_rule(s, o)
    assert v.agreement_ok.all() and v.top_p_ok.all() and (v.valid.to_numpy() == h).all()       # one distance, the other stages off
    with pytest.raises(KeyError, match='not in the scores'): judges.fit_people_rule(s, h, distances=('pixels',))
    with pytest.raises(ValueError, match="one people's label per scored image"): judges.fit_people_rule(s, h[:5])


def test_the_rule_in_use(judges, study, ci):
    "MNIST's judges use the rule fitted to people (profiles.toml `[judges] rule`); the agreement they report is held out"
    x, _, L = study
    assert ci.budget('judges').rule == 'people'
    R = judges.people_rule()
    assert judges.rule() is R and R['rule'] == PEOPLE_RULES[2] and R['n_people'] == int(L.agreed.sum())
    assert (judges.valid(x) == judges.valid(x, R)).all() and R['distance'] in judges.scores(x[:2])
    a = judges.people_agreement()
    assert a['held_out'] and a['rule'] == PEOPLE_RULES[2] and a['n_scored'] < a['n'] and 'held-out halves' in judges.people_note()


def test_an_undefined_rule_is_refused(judges, monkeypatch):
    monkeypatch.delitem(RULES, 'people')
    with pytest.raises(KeyError, match="validity rule 'people'.*is not defined"): judges.rule()
