"""`make gpu-check DRY_RUN=1`: every step of the GPU check runs on the CPU at `ci` scale, the CPU agrees with itself exactly,
the results are stamped and written after each step, a step past its share is cut and the next one still runs, and bad
arguments are refused before any work. The dry run's list of opened files is what `make gpu-bundle` packs."""
import importlib.util, json, os, subprocess, sys, time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location('gpu_check', ROOT/'tools'/'gpu_check.py')
gc = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(gc)


@pytest.fixture(scope='module')
def dry(tmp_path_factory):
    "One dry run of every step (as `make gpu-check DRY_RUN=1` runs it), in a subprocess; its folder of results"
    out = tmp_path_factory.mktemp('gpu-check')
    t0 = time.time()
    r = subprocess.run([sys.executable, str(ROOT/'tools'/'gpu_check.py'), '--dry-run', '--minutes', '5', '--out', str(out),
                        '--record-files', str(out/'files.txt')], cwd=ROOT, text=True, capture_output=True, timeout=420,
                       env=dict(os.environ, MPLBACKEND='Agg'))
    print(r.stdout[-3000:], r.stderr[-3000:])
    return dict(rc=r.returncode, out=out, stdout=r.stdout, seconds=time.time() - t0,
                result=json.loads(next(out.glob('*.json')).read_text()))


def test_every_step_runs_on_the_cpu(dry):
    res = dry['result']
    assert dry['rc'] == 0, dry['stdout'][-2000:]
    assert list(res['steps']) == list(gc.STEPS)
    for name, st in res['steps'].items():
        assert st['status'] == 'ok', (name, st.get('error'))
        assert st['rows'], name
    assert dry['seconds'] < 300   # the limit for the dry run
    assert '6 of 6 steps ok; 0 checks outside their tolerance' in dry['stdout']


def test_the_cpu_agrees_with_itself(dry):
    rows = dry['result']['steps']['correctness']['rows']
    kinds = {r['check'].split()[0] for r in rows}
    assert kinds == {'generator', 'pair', 'judges', 'strategy'}
    assert {r['check'] for r in rows if r['check'].startswith('generator')} == {f'generator {k} (mnist)' for k in
                                                                                 ('GAN', 'VAE', 'cGAN', 'DDIM', 'VQ-VAE')}
    strategies = {r['check'].split()[1] for r in rows if r['check'].startswith('strategy')}
    assert {'random', 'nsga2', 'sinvad_ga', 'hill_climb', 'gift_ga', 'pixel_mutation'} <= strategies
    for r in rows:
        assert r['ok'] and r['tolerance'] == 0, r
        if 'unique' in r: assert r['unique'][0] == r['unique'][1] > 0 and r['evaluations'][0] == r['evaluations'][1]


def test_rows_of_each_step(dry):
    s = dry['result']['steps']
    runs = {r['run']: r for r in s['search']['rows']}
    assert {'raw generator + both models, batch 100', 'raw generator + both models, batch 1000', 'DiffGAN as published',
            'DiffGAN with novelty'} <= set(runs)
    assert 0 < runs['DiffGAN as published']['share_evaluating'] <= 1 and runs['DiffGAN with novelty']['evaluations'] > 0
    assert {(r['generator'], r['step']) for r in s['giftbench']['rows']} == {(k, 'low') for k in ('VAE', 'cGAN', 'DDIM')}
    assert s['giftbench']['rows'][0]['generator'] == 'DDIM'   # the diffusion model's cell first
    rq = [r for r in s['rq1']['rows'] if 'evaluations' in r]
    assert {r['method'] for r in rq} == {'DiffGAN', 'DRfuzz'} and all(r['evaluations'] >= 200 for r in rq)
    assert all(r['unique_at_common'] >= r['valid_at_common'] for r in s['rq1']['rows'] if 'common_evaluations' in r)
    models = {(r['model'], r['shape']) for r in s['training']['rows']}
    assert ('GIFTbench DDPM UNet', '3×32×32') in models and ('zoo Argus VGG16', '3×32×32') in models
    assert all(r['images_per_s'] > 0 and r['estimate_mb'] > 0 for r in s['training']['rows'])
    assert {r['generator'] for r in s['widgets']['rows']} == {f'{k} (mnist)' for k in ('GAN', 'VAE', 'cGAN', 'DDIM', 'VQ-VAE')}


def test_results_are_stamped_and_summarised(dry):
    res, out = dry['result'], dry['out']
    assert res['dry_run'] and res['device'] == 'cpu' and res['profile'] == 'quick' and res['commit']
    assert res['tolerances'] == gc.TOL and res['evals_1h'] == gc.EVALS_1H
    md = next(out.glob('*.md')).read_text()
    assert 'DRY RUN on the CPU' in md and all(f'## {n}: ok' in md for n in gc.STEPS)
    assert next(out.glob('gpu_check_*.png')).stat().st_size > 10_000


def test_recorded_files_are_the_bundles(dry):
    files = (dry['out']/'files.txt').read_text().split()
    assert 'data/mnist/test.npz' in files
    assert any(f.startswith('data/checkpoints/mnist-gan-G.quick') for f in files)
    assert any(f.startswith('data/checkpoints/mnist-ddpm-unet.quick') for f in files)
    assert not any(f.startswith(('_build/', '.venv/')) or f.endswith('.pyc') for f in files)


def test_a_step_past_its_share_is_cut_and_the_next_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(gc, 'MIN_SHARE', 0.1)
    ck = gc.Check(torch.device('cpu'), True, 'quick', 0.05, tmp_path/'r.json', tmp_path/'r.md', tmp_path/'r.png')
    ck.result = dict(steps={})
    def slow(ck):
        for i in range(100): ck.row('slow', i=i); time.sleep(0.1)
    def fast(ck): ck.row('fast', x=1)
    t0 = time.time()
    gc.run_steps(ck, ['slow', 'fast'], dict(slow=slow, fast=fast), dict(slow=1, fast=1))
    st = json.loads((tmp_path/'r.json').read_text())['steps']
    assert st['slow']['status'] == 'cut' and 'past its share' in st['slow']['error']
    assert 5 <= len(st['slow']['rows']) < 100   # what it finished is kept
    assert st['fast'] == dict(status='ok', rows=[dict(x=1)], share_s=st['fast']['share_s'], seconds=st['fast']['seconds'])
    assert time.time() - t0 < 5


def test_a_failing_step_is_recorded(tmp_path):
    ck = gc.Check(torch.device('cpu'), True, 'quick', 1, tmp_path/'r.json', tmp_path/'r.md', tmp_path/'r.png')
    ck.result = dict(steps={})
    def bad(ck): raise ValueError('no such model')
    gc.run_steps(ck, ['bad'], dict(bad=bad), dict(bad=1))
    st = ck.result['steps']['bad']
    assert st['status'] == 'failed' and st['error'] == 'ValueError: no such model' and 'Traceback' in st['traceback']


@pytest.mark.parametrize('args, msg', [(['--steps', 'correctness,fly'], 'unknown step(s) fly; accepted: correctness, search'),
                                       (['--minutes', '0'], '--minutes must be > 0, got 0.0'),
                                       ([], 'no CUDA device here')])
def test_bad_arguments_are_refused(args, msg, capsys, monkeypatch):
    import torch
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    with pytest.raises(SystemExit) as e: gc.main(args)
    assert e.value.code == 2 and msg in capsys.readouterr().err


def test_the_bundle_holds_what_the_dry_run_read(dry, tmp_path):
    "`make gpu-bundle` from the dry run's list (wheels aside: they need the network): every file it read, the commit, the line"
    out = tmp_path/'bundle'
    r = subprocess.run([sys.executable, str(ROOT/'tools'/'gpu_bundle.py'), '--files', str(dry['out']/'files.txt'), '--no-wheels',
                        '--out', str(out)], cwd=ROOT, text=True, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    for f in (dry['out']/'files.txt').read_text().split():
        assert (out/f).is_file(), f
    assert (out/'tools'/'gpu_check.py').is_file() and (out/'latentnb'/'search'/'loop.py').is_file()
    assert sum(f.stat().st_size for f in out.rglob('*') if f.is_file()) < 50*2**20   # room left for the wheels (13 MiB) under 60
    readme = (out/'README.md').read_text()
    assert 'LATENTNB_ROOT=$PWD python3 tools/gpu_check.py --out results' in readme and 'git sparse-checkout set' in readme
    assert (out/'COMMIT').read_text().strip()
    (tmp_path/'mine').mkdir(); (tmp_path/'mine'/'thesis.txt').write_text('x')   # a folder that is not a bundle is never emptied
    r = subprocess.run([sys.executable, str(ROOT/'tools'/'gpu_bundle.py'), '--files', str(dry['out']/'files.txt'), '--no-wheels',
                        '--out', str(tmp_path/'mine')], cwd=ROOT, text=True, capture_output=True, timeout=60)
    assert r.returncode != 0 and 'is not a gpu bundle' in r.stderr and (tmp_path/'mine'/'thesis.txt').exists()
