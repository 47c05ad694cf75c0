"GIFTbench's published MTurk study: the reader on small files in the released format (trailing empty columns, 'N/A', free text, other dataset codes, a missing summary column), Table III's human columns and their test, and the machine-side Table III definitions."
import io

import numpy as np
import pandas as pd
import pytest
import torch

from latentnb.config import load_config
from latentnb.giftbench import (MTurkError, read_mturk, human_table3, table3_tests, mturk_file, summarise, GiftResult)

HDR = ('Image URL,ID,DATASET,TOOL,MUT_EXT,ITER,Expected,Predicted,ASS 1,ASS 2,Misclass Human 1,Misclass Human 2,'
       'Valid Human 1,Valid Human 2,Validity?,Label Preservation?,,\n')
ROWS = ['1_SVHN_gan_high_iteration28_X6_Y0,1,SVHN,gan,high,28,6,0,6,6,0,0,0,0,yes,yes,,',
        '2_SVHN_gan_low_iteration30_X7_Y2,2,SVHN,gan,low,30,7,2,Not a House Number,Not a House Number,1,1,1,1,no,N/A,,',
        '3_SVHN_sd_high_iteration1_X0_Y9,3,SVHN,sd,high,1,0,9,8,8,1,1,0,0,yes,no,,',
        '4_SVHN_gan_high_iteration41_X6_Y1,4,SVHN,gan,high,41,6,1,1,Not a House Number,1,1,0,1,N/A,no,,',
        '5_SVHN_sd_high_iteration17_X3_Y5,5,SVHN,sd,high,17,3,5,3,3,0,0,0,0,yes,yes,,']


def _file(tmp_path, rows=ROWS, header=HDR, eol='\r\n'):
    blank = ',' * header.count(',')   # the released files end with empty rows and columns
    p = tmp_path/'h.csv'; p.write_bytes((header.replace('\n', eol) + eol.join(rows) + eol + blank + eol).encode()); return p


def test_read_released_format(tmp_path):
    m = read_mturk(_file(tmp_path))
    assert len(m) == 5 and set(m['dataset']) == {'svhn'} and 'Unnamed: 16' not in m.columns
    assert m['valid'].tolist() == [True, False, True, False, True]
    assert m['preserved'].tolist() == [True, False, False, False, True]
    assert m['answer_1'][1] == 'Not a House Number'
    assert (m['valid'] == m['released_valid'].fillna(False)).all() and (m['preserved'] == m['released_preserved'].fillna(False)).all()


def test_human_table3(tmp_path):
    t = human_table3(read_mturk(_file(tmp_path)))
    assert list(t.columns) == ['dataset', 'step', 'generator', 'n', 'n_valid', 'pct_valid', 'n_preserved', 'pct_preserved']
    assert t[['step', 'generator', 'n', 'n_valid', 'n_preserved']].values.tolist() == \
        [['low', 'gan', 1, 0, 0], ['high', 'gan', 2, 1, 1], ['high', 'sd', 2, 2, 1]]
    assert np.isnan(t['pct_preserved'][0]) and t['pct_valid'].tolist()[1:] == [50.0, 100.0] and t['pct_preserved'].tolist()[1:] == [100.0, 50.0]


def test_missing_summary_columns_and_other_codes(tmp_path):
    hdr = HDR.replace(',Validity?,Label Preservation?,,', '')
    rows = ['7,INTB,sd,low,3,teddy,pizza,teddy,teddy,0,0,0,0', '8,INPI,vae,high,5,pizza,teddy,a dog,pizza,1,0,0,0',
            '9,CIF,gan,low,9,3,5,cat,cat,0,0,0,0']
    m = read_mturk(_file(tmp_path, [r.replace(r.split(',')[0] + ',', f'img{r[0]},{r[0]},', 1) for r in rows], hdr, '\n'))
    assert m['dataset'].tolist() == ['imagenet-teddy', 'imagenet-pizza', 'cifar10'] and 'released_valid' not in m
    assert m['expected'].tolist() == ['teddy', 'pizza', 3] and m['preserved'].tolist() == [True, False, True]


def test_bad_rows_and_columns(tmp_path):
    rows = ROWS[:2] + ['6,6,MNIST,gan,mid,1,3,5,3,3,0,0,0,2,yes,yes,,']
    with pytest.raises(MTurkError, match=r"line 4: ID='6': unknown DATASET .*MUT_EXT must be one of low, high; Valid Human 2 must be 0 or 1"):
        read_mturk(_file(tmp_path, rows))
    ok, bad = read_mturk(_file(tmp_path, rows), drop=True)
    assert len(ok) == 2 and len(bad) == 1
    with pytest.raises(MTurkError, match=r"lacks column\(s\) \['Valid Human 1'\]"):
        read_mturk(io.StringIO(HDR.replace('Valid Human 1', 'V1') + ROWS[0]))


def test_vendored_files():
    cfg = load_config('ci')
    pub = pd.concat([read_mturk(mturk_file(n, cfg)) for n in ('MNIST', 'SVHN')], ignore_index=True)
    t = human_table3(pub).set_index(['dataset', 'step', 'generator'])
    assert t.loc[('mnist', 'high', 'vae'), ['n', 'n_valid', 'n_preserved']].tolist() == [99, 73, 36]
    assert t.loc[('svhn', 'high', 'sd'), ['n', 'n_valid', 'n_preserved']].tolist() == [95, 22, 4]
    tt = table3_tests(pub)
    row = tt[(tt.dataset == 'mnist') & (tt.step == 'high') & (tt.column == '% valid') & (tt.other == 'sd')].iloc[0]
    assert row.best == 'vae' and row.significant
    with pytest.raises(FileNotFoundError, match='no vendored GIFTbench'): mturk_file('CIFAR', cfg)


def _fake(iters, budget=250):
    S = len(iters); it = torch.tensor(iters)
    return GiftResult('VAE', 0.1, torch.zeros(S, dtype=torch.long), torch.zeros(S, 2), torch.zeros(S, 1, 28, 28), it < budget, it,
                      torch.zeros(S, 2), torch.zeros(S, 1, 28, 28), torch.zeros(S, dtype=torch.long), torch.zeros(S, 1))


def test_machine_table3_definitions():
    r = summarise(_fake([100, 130, 150, 166] + [250]*95), 'mnist', 'low')
    assert r['mean_iterations'] == 245.41 and r['mean_iterations_to_failure'] == 136.5 and r['n_misclassified'] == 4
    judge = lambda x, y: (torch.tensor([1, 1, 0, 0]), torch.tensor([1, 0, 1, 0]))
    r = summarise(_fake([100, 130, 150, 166] + [250]*95), 'mnist', 'low', judge)
    assert (r['n_valid'], r['pct_valid'], r['n_label_preserved'], r['pct_label_preserved']) == (2, 50.0, 1, 50.0)
    none_valid = lambda x, y: (torch.zeros(4, dtype=torch.bool), torch.ones(4, dtype=torch.bool))
    r = summarise(_fake([100, 130, 150, 166]), 'mnist', 'low', none_valid)
    assert r['pct_valid'] == 0.0 and np.isnan(r['pct_label_preserved'])


def test_mean_iterations_on_published_failures():
    "Table III, MNIST: 4 failures of 99 viable seeds, mean 245.41 = the published failures' own ITER + 95 seeds at the budget, over 99"
    m = read_mturk(mturk_file('MNIST', load_config('ci')))
    it = m.query("dataset == 'mnist' and step == 'low' and generator == 'vae'")['iteration'].astype(int).tolist()
    assert len(it) == 4 and sum(it) == 546
    r = summarise(_fake(it + [250]*95), 'mnist', 'low')
    assert r['mean_iterations'] == 245.41 and r['mean_iterations_to_failure'] == 136.5
    assert round(float(np.mean(it)), 2) != 245.41
