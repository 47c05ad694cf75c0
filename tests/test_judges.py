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
    "On its own calibration images each stage rejects at most about q; the whole rule keeps ≥ 1 − 3q of them"
    from latentnb.data import load_dataset
    xc = load_dataset('mnist', 'train')[0][judges.split['calibration']]
    v = judges.verdicts(xc)
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
    t = judge_controls(j, reference=False)
    assert len(t) == len(j.members) + 2 and ((t[list(CONTROL_KINDS)] >= 0) & (t[list(CONTROL_KINDS)] <= 1)).all().all()
