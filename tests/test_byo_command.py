"""`latentnb byo` (notebook 92, latentnb.tools.cli, on `byo_run` of notebook 93): end to end on folders and .npz files of
1×28×28, 1×32×32 and 3×32×32 images with two TorchScript models the test writes, under `ci`; the report answers first and holds
no library source; Ctrl-C keeps what is done and a rerun resumes; an installed copy runs outside any checkout; each wrong input
stops it with one line before anything is written."""
import json, os, re, shutil, signal, subprocess, sys, time, warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from PIL import Image
from torch import nn

os.environ.setdefault('LATENTNB_PROFILE', 'ci')
from latentnb.tools.cli import main

warnings.filterwarnings('ignore', message='`torch.jit')
ROOT = Path(__file__).resolve().parent.parent
CMD = Path(sys.executable).parent/'latentnb'   # the console script setup.py registers


class Squares(nn.Module):
    "Scores each class by the brightness of its diagonal block; `swap`: when the top two are close (an ambiguous image), 0 and 1 swap"
    def __init__(self, k:int=3, swap:bool=False, c:int=3):
        super().__init__(); self.k, self.swap, self.c = k, swap, c
    def forward(self, x):
        if x.shape[1] != self.c: raise ValueError(f'expected {self.c} channels')
        s = x.shape[-1]//self.k
        sc = torch.stack([x[:, :, i*s:(i + 1)*s, i*s:(i + 1)*s].mean((1, 2, 3)) for i in range(self.k)], 1)*10
        if self.swap:
            top = sc.topk(2, 1).values
            sc = torch.where((top[:, :1] - top[:, 1:]) < 5, sc[:, [1, 0] + list(range(2, self.k))], sc)
        return sc


def images(n:int=12, k:int=3, side:int=16, c:int=3) -> tuple:
    "n uint8 images (N, c, side, side) per class: dark noise with class i's diagonal block bright; and their labels"
    x, y = [], []
    for cl in range(k):
        for i in range(n):
            a = (np.random.default_rng(100*cl + i).random((c, side, side))*25).astype(np.uint8)
            s = side//k; a[:, cl*s:(cl + 1)*s, cl*s:(cl + 1)*s] = 230
            x.append(a); y.append(cl)
    return np.stack(x), np.array(y)


def pngs(root:Path, n:int=12, k:int=3, side:int=16, c:int=3) -> Path:
    "The images of `images` as PNGs in root/c<i>/ (grey when c = 1)"
    x, y = images(n, k, side, c)
    for j, (a, cl) in enumerate(zip(x, y)):
        (root/f'c{cl}').mkdir(parents=True, exist_ok=True)
        Image.fromarray(a[0] if c == 1 else a.transpose(1, 2, 0)).save(root/f'c{cl}'/f'{j:03d}.png')
    return root


def script(path:Path, **kw) -> Path:
    torch.jit.save(torch.jit.script(Squares(**kw)), path); return path


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith('LATENTNB_')}   # the command sets the profile and folders itself
    return dict(env, LATENTNB_THREADS='1', PYTHONUNBUFFERED='1', MPLBACKEND='Agg')


def _run(args, cwd):
    "`latentnb byo args` in this process: (exit status, stdout, stderr)"
    import contextlib, io
    o, e, here = io.StringIO(), io.StringIO(), os.getcwd()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stderr(e), contextlib.redirect_stdout(o): rc = main(['byo', *args])
    finally: os.chdir(here)
    return rc, o.getvalue(), e.getvalue()


def check_outputs(out:Path, shape:tuple, n:int, kinds=('VAE',), evals:int=300):
    "What every finished run writes: the report (the answer first, no source), the summary, results.json, label.csv, export/"
    res = json.loads((out/'results.json').read_text())
    assert res['data']['shape'] == list(shape) and res['data']['n'] == n and res['generators'] == list(kinds)
    assert [r['run'] for r in res['runs']] == [f'{m} ({k})' for k in kinds for m in ('DiffGAN', 'random')]
    assert all(evals <= r['evaluations'] < evals + 50 for r in res['runs'])   # ci: 300 evaluations unless told, batches of 50
    page = (out/'report.html').read_text()
    first = page[:page.index('</table>')]   # the first screen: the title, the answer and the summary table
    assert 'disagreeing' in first and ('valid' in first) and page.index('</table>') < page.index('already disagree')
    assert not re.search(r'\bdef \w+\(|^import |\bfrom latentnb', page, re.M)   # no library source
    md = (out/'summary.md').read_text()
    assert md.startswith('# latentnb byo') and re.search(r'\| generator +\| method', md) and res['answer'] in md
    lab = pd.read_csv(out/'label.csv')
    assert len(lab) == res['exported'] and all((out/f).is_file() for f in lab.file) and (lab.label_a != lab.label_b).all()
    assert set(lab.columns) >= {'file', 'label_a', 'label_b', 'oracle', 'right', 'label'}
    return res


@pytest.mark.parametrize('shape', [(1, 28, 28), (1, 32, 32), (3, 32, 32)])
@pytest.mark.parametrize('form', ['folder', 'npz'])
def test_any_shape_end_to_end(tmp_path, shape, form):
    "MNIST's shape first among them: the command runs the library, never the tutorial notebook's self-tests"
    c, side = shape[0], shape[1]
    if form == 'folder': pngs(tmp_path/'imgs', c=c, side=side); src = 'imgs'
    else:
        x, y = images(c=c, side=side); np.savez(tmp_path/'imgs.npz', x=x, y=y, classes=np.array(['a', 'b', 'c'])); src = 'imgs.npz'
    script(tmp_path/'a.pt', c=c); script(tmp_path/'b.pt', c=c, swap=True)
    rc, o, e = _run(['--images', src, '--model-a', 'a.pt', '--model-b', 'b.pt', '--out', 'out', '--profile', 'ci', '--generator', 'VAE'],
                    tmp_path)
    assert rc == 0, (o + e)[-3000:]
    res = check_outputs(tmp_path/'out', shape, 36)
    assert res['model_a'] == 'a.pt' and res['images'] == src   # the paths as typed, not the models' repr
    assert not (tmp_path/'out'/'byo.ipynb').exists()           # no notebook was executed


def test_flags_oracle_and_export(tmp_path):
    "--max-evals, --epochs and --export change the run; --oracle says which model is right on each exported failure"
    pngs(tmp_path/'imgs'); script(tmp_path/'a.pt'); script(tmp_path/'b.pt', swap=True); script(tmp_path/'o.pt')
    rc, o, e = _run(['--images', 'imgs', '--model-a', 'a.pt', '--model-b', 'b.pt', '--out', 'out', '--profile', 'ci', '--generator', 'vae',
                     '--max-evals', '450', '--epochs', '2', '--export', '3', '--oracle', 'o.pt'], tmp_path)
    assert rc == 0, (o + e)[-3000:]
    res = json.loads((tmp_path/'out'/'results.json').read_text())
    assert all(450 <= r['evaluations'] < 500 for r in res['runs'])
    spec = json.loads(next((tmp_path/'out'/'checkpoints').glob('byo-imgs-vae*.ci.json')).read_text())
    assert '"epochs": 2' in json.dumps(spec)
    lab = pd.read_csv(tmp_path/'out'/'label.csv')
    assert len(lab) <= 3*len(res['runs']) and lab.oracle.notna().all() and set(lab.right) <= {'A', 'B', 'neither'}
    assert all(Path(f).parts[1] == o for f, o in zip(lab.file, lab.oracle))   # export/<the oracle's class>/
    assert res['oracle'] == 'o.pt' and sum(res['oracle_right'].values()) == len(lab)
    (tmp_path/'out'/'mine.txt').write_text('x')   # the same command with another --export: the files match label.csv again
    rc, o, e = _run(['--images', 'imgs', '--model-a', 'a.pt', '--model-b', 'b.pt', '--out', 'out', '--profile', 'ci', '--generator', 'vae',
                     '--max-evals', '450', '--epochs', '2', '--export', '1', '--oracle', 'o.pt'], tmp_path)
    lab2 = pd.read_csv(tmp_path/'out'/'label.csv')
    assert rc == 0 and len(lab2) <= len(res['runs']) and (tmp_path/'out'/'mine.txt').exists()
    assert sorted(str(p.relative_to(tmp_path/'out')) for p in (tmp_path/'out'/'export').rglob('*.png')) == sorted(lab2.file)


def test_ctrl_c_keeps_the_work_and_a_rerun_resumes(tmp_path):
    "Run 1 is interrupted (SIGINT, as Ctrl-C) once a generator is trained; run 2 resumes and finishes; run 3 reopens everything"
    assert CMD.exists(), f'{CMD} missing: `pip install -e .` registers the console script'
    pngs(tmp_path/'my images'); script(tmp_path/'a.pt'); script(tmp_path/'b.pt', swap=True)
    out = tmp_path/'out'
    cmd = [str(CMD), 'byo', '--images', 'my images', '--model-a', 'a.pt', '--model-b', str(tmp_path/'b.pt'), '--out', str(out),
           '--profile', 'ci', '--epochs', '12']   # a GAN training of seconds: room to interrupt it
    p = subprocess.Popen(cmd, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t0 = time.time()
    while time.time() - t0 < 300 and p.poll() is None and not list((out/'checkpoints').glob('byo-*.pt')): time.sleep(0.1)
    if p.poll() is None: p.send_signal(signal.SIGINT); time.sleep(0.3); p.send_signal(signal.SIGINT)   # twice, as an impatient user
    log1 = p.communicate(timeout=120)[0]
    if p.returncode != 0:   # 0: the run ended before the signal came (a fast machine); the resume below still reopens it
        assert p.returncode == 130, log1[-3000:]
        assert 'interrupted' in log1 and 'run the same command again to resume' in log1, log1[-3000:]
        assert 'Traceback' not in log1 and log1.count('\n') < 40, log1[-3000:]   # no asyncio or library traceback
        assert list((out/'checkpoints').glob('byo-my-images-*.pt'))   # what was done is kept (a finished or a partial training)
    r = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert 'resuming in' in r.stdout, r.stdout[-3000:]
    res = check_outputs(out, (3, 16, 16), 36, ('GAN', 'VAE'))
    assert res['data'] == dict(name='my-images', n=36, shape=[3, 16, 16], classes=['c0', 'c1', 'c2'])
    assert set(res['why_none']) <= {x['run'] for x in res['runs']}
    assert not list((ROOT/'_build'/'byo'/'ci').glob('byo-my-images-*')) and len(list((out/'runs').iterdir())) == 4   # runs under OUT
    r3 = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600)
    assert r3.returncode == 0 and json.loads((out/'results.json').read_text())['runs'] == res['runs'], (r3.stdout + r3.stderr)[-3000:]
    assert 'training it now' not in r3.stdout


def test_an_installed_copy_runs_outside_a_checkout(tmp_path):
    "The package alone on PYTHONPATH, run from a folder outside any checkout, with no LATENTNB_ROOT: it trains into --out"
    pkg, work = tmp_path/'site', tmp_path/'work'
    shutil.copytree(ROOT/'latentnb', pkg/'latentnb', ignore=shutil.ignore_patterns('__pycache__'))
    pngs(work/'imgs'); script(work/'a.pt'); script(work/'b.pt', swap=True)
    env = {k: v for k, v in _env().items() if k not in ('PYTHONPATH', 'XDG_CACHE_HOME')}
    env.update(PYTHONPATH=str(pkg), HOME=str(tmp_path/'home'), XDG_CACHE_HOME=str(tmp_path/'xdg'))
    code = 'import sys; from latentnb.tools.cli import main; sys.exit(main(sys.argv[1:]))'
    r = subprocess.run([sys.executable, '-c', code, 'byo', '--images', 'imgs', '--model-a', 'a.pt', '--model-b', 'b.pt', '--out', 'out',
                        '--profile', 'ci', '--generator', 'VAE'], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    check_outputs(work/'out', (3, 16, 16), 36)
    assert list((work/'out'/'checkpoints').glob('byo-imgs-vae.ci.pt'))


@pytest.fixture
def wrong(tmp_path):
    pngs(tmp_path/'imgs'); script(tmp_path/'a.pt'); script(tmp_path/'five.pt', k=5); script(tmp_path/'grey.pt', c=1)
    (tmp_path/'empty').mkdir(); (tmp_path/'broken.pt').write_bytes(b'this is not a TorchScript file')
    (tmp_path/'flat').mkdir(); Image.new('RGB', (16, 16)).save(tmp_path/'flat'/'x.png')
    (tmp_path/'nocls').mkdir(); (tmp_path/'nocls'/'a').mkdir(); (tmp_path/'nocls'/'b').mkdir()
    shutil.copytree(tmp_path/'imgs', tmp_path/'corrupt'); (tmp_path/'corrupt'/'c1'/'bad.png').write_bytes(b'\x89PNG not really')
    for i, w in enumerate(('zero', 'one', 'two')): shutil.copytree(tmp_path/'imgs'/f'c{i}', tmp_path/'words'/w)   # sorted: one, two, zero
    (tmp_path/'a-file').write_text('x')
    return tmp_path


BASE = ['--model-a', 'a.pt', '--model-b', 'a.pt']

@pytest.mark.parametrize('args, msg', [
    (['--images', 'empty', *BASE], r'The folder .*empty is empty'),
    (['--images', 'flat', *BASE], 'has no sub-folders'),
    (['--images', 'nocls', *BASE], 'hold no images'),
    (['--images', 'nowhere', *BASE], 'No folder or .npz file'),
    (['--images', 'corrupt', *BASE], r'bad\.png.*cannot be read as an image'),
    (['--images', 'words', *BASE], r'both models are at chance .*sorted order'),
    (['--images', 'imgs', '--model-a', 'a.pt', '--model-b', 'five.pt'], r'model B .* answers 5 classes but imgs \(3 classes'),
    (['--images', 'imgs', '--model-a', 'grey.pt', '--model-b', 'a.pt'], r'model A .*\(N, 3, 16, 16\).*--shape'),
    (['--images', 'imgs', '--model-a', 'a.pt', '--model-b', 'broken.pt'], 'model B: .*broken.pt could not be loaded as a TorchScript'),
    (['--images', 'imgs', '--model-a', 'missing.pt', '--model-b', 'a.pt'], 'model A: no file'),
    (['--images', 'imgs', '--model-a', 'nosuchmodule:model', '--model-b', 'a.pt'], "model A: importing 'nosuchmodule' failed"),
    (['--images', 'imgs', *BASE, '--generator', 'diffusion'],
     "generators='diffusion' is not a generator kind accepted here; accepted: GAN, VAE"),
    (['--images', 'imgs', *BASE, '--epochs', '0'], '--epochs must be an integer >= 1, got 0'),
    (['--images', 'imgs', *BASE, '--max-evals', '-5'], '--max-evals must be an integer >= 1, got -5'),
    (['--images', 'imgs', *BASE, '--seconds', 'nan'], '--seconds must be a number of seconds > 0, got nan'),
    (['--images', 'imgs', *BASE, '--oracle', 'five.pt'], r'answers 5 classes'),
])
def test_wrong_inputs_stop_before_any_work(wrong, args, msg):
    rc, o, err = _run([*args, '--out', 'out', '--profile', 'ci'], wrong)
    assert rc == 2 and err.startswith('latentnb byo: error:') and re.search(msg, err) and err.count('\n') == 1, err
    assert not (wrong/'out').exists()   # nothing started: no checkpoint, no run, no report


@pytest.mark.parametrize('args, msg', [(['--out', 'a-file'], r'--out .*a-file is a file'),
                                       (['--out', 'out', '--device', 'cuda'], 'torch sees no CUDA'),
                                       (['--out', 'out', '--device', 'tpu'], "--device tpu: not a device; accepted: 'cpu', 'cuda'")])
def test_wrong_out_and_device(wrong, args, msg, monkeypatch):
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: False)
    rc, o, err = _run(['--images', 'imgs', *BASE, *args, '--profile', 'ci'], wrong)
    assert rc == 2 and re.search(msg, err) and err.count('\n') == 1, err
    assert not (wrong/'out').exists() and (wrong/'a-file').read_text() == 'x'


def test_a_module_callable_is_a_model(wrong):
    "`module:name` imported from the working folder (a factory without arguments is called) passes the checks"
    (wrong/'mymodels.py').write_text(
        "import numpy as np\n"
        "def scores(x): return np.stack([x[:, :, i*5:i*5 + 5, i*5:i*5 + 5].mean((1, 2, 3)) for i in range(3)], 1)\n"
        "def build(): return scores\n")
    from latentnb.tools.byo_run import byo_setup
    s = byo_setup('imgs', 'mymodels:scores', 'mymodels.py:build', profile='ci', generators='vae', cwd=wrong)
    assert (s['data'].n_classes, s['kinds']) == (3, ('VAE',)) and s['a'](np.zeros((2, 3, 16, 16), np.float32)).shape == (2, 3)
    with pytest.raises(ValueError, match='too few to train the VAE'):
        shutil.rmtree(wrong/'imgs'); pngs(wrong/'imgs', n=4)
        byo_setup('imgs', 'mymodels:scores', 'a.pt', profile='ci', generators='vae', cwd=wrong)


def test_no_disagreement_still_reports(tmp_path):
    "Two copies of one model never disagree: the run ends with a report that says so, not an error"
    pngs(tmp_path/'imgs'); script(tmp_path/'a.pt')
    rc, o, e = _run(['--images', 'imgs', '--model-a', 'a.pt', '--model-b', 'a.pt', '--out', 'out', '--profile', 'ci', '--generator', 'vae'],
                    tmp_path)
    assert rc == 0, (o + e)[-3000:]
    res = json.loads((tmp_path/'out'/'results.json').read_text())
    assert all(r['triggering'] == 0 for r in res['runs']) and res['exported'] == 0 and 'no triggering input' in json.dumps(res['why_none'])
    assert 'no failure to show' in (tmp_path/'out'/'report.html').read_text()


def test_warnings_are_one_line_each(tmp_path):
    "Mixed image sizes and few held-out images do not stop the run; each says so in one line of stderr"
    pngs(tmp_path/'imgs'); script(tmp_path/'a.pt'); script(tmp_path/'b.pt', swap=True)
    Image.fromarray(np.full((20, 30, 3), 200, np.uint8)).save(tmp_path/'imgs'/'c0'/'odd.png')   # 30×20 among 16×16
    rc, o, e = _run(['--images', 'imgs', '--model-a', 'a.pt', '--model-b', 'b.pt', '--out', 'out', '--profile', 'ci', '--generator', 'vae'],
                    tmp_path)
    assert rc == 0, (o + e)[-3000:]
    lines = [l for l in e.splitlines() if l.strip()]
    assert all(l.startswith('latentnb byo: warning: ') for l in lines), e
    assert any('images differ' in l and '--shape' in l for l in lines), e
    assert any('only 7 of your 37 images are held out to calibrate the filter' in l for l in lines), e
