"""`latentnb byo` (notebook 92, latentnb.tools.cli): notebook 91 run end to end on a folder of PNGs and two TorchScript models the
test writes, under `ci`; Ctrl-C keeps what is done and a rerun resumes; each wrong input stops it before any training."""
import json, os, shutil, signal, subprocess, sys, time, warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

os.environ.setdefault('LATENTNB_PROFILE', 'ci')
from latentnb.tools.cli import BYO_NOTEBOOK, main, inject_parameters, notebook_parameters

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


def pngs(root:Path, n:int=12, k:int=3, side:int=16) -> Path:
    "n PNGs per class in root/c<i>/: a dark noisy square with class i's diagonal block bright"
    for c in range(k):
        (root/f'c{c}').mkdir(parents=True, exist_ok=True)
        for i in range(n):
            x = (np.random.default_rng(100*c + i).random((side, side, 3))*25).astype(np.uint8)
            s = side//k; x[c*s:(c + 1)*s, c*s:(c + 1)*s] = 230
            Image.fromarray(x).save(root/f'c{c}'/f'{i:03d}.png')
    return root


def script(path:Path, **kw) -> Path:
    torch.jit.save(torch.jit.script(Squares(**kw)), path); return path


@pytest.fixture(scope='module')
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp('byo-cmd')
    pngs(d/'my images'); script(d/'a.pt'); script(d/'b.pt', swap=True)
    return d


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith('LATENTNB_')}   # the command sets the profile and folders itself
    return dict(env, LATENTNB_THREADS='1', PYTHONUNBUFFERED='1', MPLBACKEND='Agg')


def _cmd(d, out, *extra):
    return [str(CMD), 'byo', '--images', 'my images', '--model-a', 'a.pt', '--model-b', str(d/'b.pt'), '--out', str(out),
            '--profile', 'ci', *extra]


def test_parameters_are_injected_after_the_parameters_cell():
    import nbformat
    nb = nbformat.read(BYO_NOTEBOOK, as_version=4)
    assert {'images', 'model_a', 'model_b', 'shape', 'name', 'generators', 'out', 'cwd'} <= set(notebook_parameters(nb))
    nb2 = inject_parameters(nb, images='/x', out='/y')
    i = next(i for i, c in enumerate(nb2.cells) if c.get('metadata', {}).get('tags') == ['injected-parameters'])
    assert '#| tags: [parameters]' in nb2.cells[i - 1].source and "images = '/x'\nout = '/y'" in nb2.cells[i].source
    with pytest.raises(ValueError, match='no parameter imgs'): inject_parameters(nb, imgs='/x')


def test_command_runs_end_to_end_and_resumes_after_ctrl_c(inputs):
    "Run 1 is interrupted (SIGINT, as Ctrl-C) once a generator is trained; run 2 resumes and finishes; run 3 reopens everything"
    assert CMD.exists(), f'{CMD} missing: `pip install -e .` registers the console script'
    d, out = inputs, inputs/'out'
    p = subprocess.Popen(_cmd(d, out), cwd=d, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t0 = time.time()
    while time.time() - t0 < 300 and p.poll() is None and not list((out/'checkpoints').glob('byo-*.ci.pt')): time.sleep(0.2)
    interrupted = p.poll() is None
    if interrupted: p.send_signal(signal.SIGINT)
    log1 = p.communicate(timeout=120)[0]
    if interrupted:
        assert p.returncode == 130, log1[-3000:]
        assert 'interrupted' in log1 and 'run the same command again to resume' in log1 and (out/'byo.ipynb').exists(), log1[-3000:]
        assert list((out/'checkpoints').glob('byo-my-images-*.ci.pt'))   # what was done is kept
    else: assert p.returncode == 0, log1[-3000:]   # a fast machine finished first: the resume below still reopens it

    t1 = time.time()
    r = subprocess.run(_cmd(d, out), cwd=d, env=_env(), capture_output=True, text=True, timeout=600)
    log2, s2 = r.stdout + r.stderr, time.time() - t1
    assert r.returncode == 0, log2[-4000:]
    assert 'resuming in' in log2 and '[cell ' in log2 and '3. A generator of your images' in log2   # progress is printed
    assert 'reopened' in log2                                                                       # the trained generator, loaded
    for f in ('byo.ipynb', 'report.html', 'results.json', 'failures.csv'): assert (out/f).exists(), f
    res = json.loads((out/'results.json').read_text())
    assert res['profile'] == 'ci' and res['generators'] == ['GAN', 'VAE'] and res['generator'] in ('GAN', 'VAE')
    assert res['data'] == dict(name='my-images', n=36, shape=[3, 16, 16], classes=['c0', 'c1', 'c2'])
    assert [x['run'] for x in res['runs']] == ['DiffGAN (GAN)', 'random (GAN)', 'DiffGAN (VAE)', 'random (VAE)']
    assert all(300 <= x['evaluations'] < 350 and x['triggering'] > 0 for x in res['runs'])   # ci: 300 evaluations, batches of 50
    assert set(res['why_none']) == {x['run'] for x in res['runs'] if x['valid_judged'] == 0}
    import nbformat
    nb = nbformat.read(out/'byo.ipynb', as_version=4)
    assert any('injected-parameters' in c.get('metadata', {}).get('tags', []) for c in nb.cells)
    assert not [o for c in nb.cells if c.cell_type == 'code' for o in c.outputs if o.output_type == 'error']
    assert 'Which generator' in (out/'report.html').read_text()
    import pandas as pd
    t = pd.read_csv(out/'failures.csv')
    assert len(t) == sum(x['judged'] for x in res['runs']) and t.valid.sum() == sum(x['valid_judged'] for x in res['runs'])
    assert all((out/f).exists() for f in t.file) and set(t.label_a) <= {'c0', 'c1', 'c2'}
    assert (t.label_a != t.label_b).all()   # every exported input is one on which the two models disagree
    assert not list((ROOT/'_build'/'byo'/'ci').glob('byo-my-images-*')) and len(list((out/'runs').iterdir())) == 4   # runs under OUT

    t2 = time.time()
    r3 = subprocess.run(_cmd(d, out), cwd=d, env=_env(), capture_output=True, text=True, timeout=600)
    assert r3.returncode == 0 and json.loads((out/'results.json').read_text())['runs'] == res['runs'], (r3.stdout + r3.stderr)[-3000:]
    print(f'resumed run {s2:.0f} s, rerun {time.time() - t2:.0f} s')


def _run(args, cwd):
    "`latentnb byo args` in this process: (exit status, stderr)"
    import contextlib, io
    e, here = io.StringIO(), os.getcwd()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stderr(e), contextlib.redirect_stdout(io.StringIO()): rc = main(['byo', *args])
    finally: os.chdir(here)
    return rc, e.getvalue()


@pytest.fixture
def wrong(tmp_path):
    pngs(tmp_path/'imgs'); script(tmp_path/'a.pt'); script(tmp_path/'five.pt', k=5); script(tmp_path/'grey.pt', c=1)
    (tmp_path/'empty').mkdir(); (tmp_path/'broken.pt').write_bytes(b'this is not a TorchScript file')
    (tmp_path/'flat').mkdir(); Image.new('RGB', (16, 16)).save(tmp_path/'flat'/'x.png')
    (tmp_path/'nocls').mkdir(); (tmp_path/'nocls'/'a').mkdir(); (tmp_path/'nocls'/'b').mkdir()
    return tmp_path


@pytest.mark.parametrize('args, msg', [
    (['--images', 'empty', '--model-a', 'a.pt', '--model-b', 'a.pt'], r'The folder .*empty is empty'),
    (['--images', 'flat', '--model-a', 'a.pt', '--model-b', 'a.pt'], 'has no sub-folders'),
    (['--images', 'nocls', '--model-a', 'a.pt', '--model-b', 'a.pt'], 'hold no images'),
    (['--images', 'nowhere', '--model-a', 'a.pt', '--model-b', 'a.pt'], 'No folder or .npz file'),
    (['--images', 'imgs', '--model-a', 'a.pt', '--model-b', 'five.pt'], r'model B .* answers 5 classes but imgs \(3 classes'),
    (['--images', 'imgs', '--model-a', 'grey.pt', '--model-b', 'a.pt'], r'model A .* does not fit imgs .*\(N, 3, 16, 16\)'),
    (['--images', 'imgs', '--model-a', 'a.pt', '--model-b', 'a.pt', '--shape', '1,16,16'], r'model A .* does not fit imgs .*\(N, 1, 16, 16\)'),
    (['--images', 'imgs', '--model-a', 'a.pt', '--model-b', 'broken.pt'], 'model B: .*broken.pt could not be loaded as a TorchScript'),
    (['--images', 'imgs', '--model-a', 'missing.pt', '--model-b', 'a.pt'], 'model A: no file'),
    (['--images', 'imgs', '--model-a', 'nosuchmodule:model', '--model-b', 'a.pt'], "model A: importing 'nosuchmodule' failed"),
    (['--images', 'imgs', '--model-a', 'a.pt', '--model-b', 'a.pt', '--generator', 'diffusion'], "generators='diffusion' is not a generator kind accepted here; accepted: GAN, VAE"),
])
def test_wrong_inputs_stop_before_any_training(wrong, args, msg):
    import re
    rc, err = _run([*args, '--out', 'out', '--profile', 'ci'], wrong)
    assert rc == 2 and err.startswith('latentnb byo: error:') and re.search(msg, err), err
    assert not (wrong/'out').exists()   # nothing started: no checkpoint, no notebook


def test_a_module_callable_is_a_model(wrong):
    "`module:name` imported from the working folder (a factory without arguments is called) passes the checks"
    (wrong/'mymodels.py').write_text("import numpy as np\n"
                                     "def scores(x): return np.stack([x[:, :, :5, :5].mean((1, 2, 3)), x.mean((1, 2, 3)), x.std((1, 2, 3))], 1)\n"
                                     "def build(): return scores\n")
    from latentnb.tools.cli import check_byo_inputs
    data, a, b, kinds = check_byo_inputs('imgs', 'mymodels:scores', 'mymodels.py:build', profile='ci', generators='vae', cwd=wrong)
    assert (data.n_classes, kinds) == (3, ('VAE',)) and a(np.zeros((2, 3, 16, 16), np.float32)).shape == (2, 3)
    with pytest.raises(ValueError, match='too few to train the VAE'):
        shutil.rmtree(wrong/'imgs'); pngs(wrong/'imgs', n=4)
        check_byo_inputs('imgs', 'mymodels:scores', 'a.pt', profile='ci', generators='vae', cwd=wrong)


def test_ctrl_c_ends_a_kernel_that_swallows_the_interrupt(tmp_path):
    "A cell that catches every interrupt (seen in CI: one swallowed between cells, the reply never came) is ended after grace_s"
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('started', flush=True)"), nbformat.v4.new_code_cell(
        "import time\nwhile True:\n    try: time.sleep(0.2)\n    except KeyboardInterrupt: pass")])
    nbformat.write(nb, tmp_path/'stubborn.ipynb')
    script = ("import sys, nbformat\nfrom latentnb.tools.cli import run_notebook\n"
              f"nb = nbformat.read({str(tmp_path/'stubborn.ipynb')!r}, as_version=4)\n"
              f"try: run_notebook(nb, {str(tmp_path/'out.ipynb')!r}, {str(tmp_path)!r}, grace_s=3)\n"
              "except KeyboardInterrupt: print('interrupted', flush=True); sys.exit(130)\n")
    p = subprocess.Popen([sys.executable, '-c', script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t0 = time.time()
    out = tmp_path/'out.ipynb'   # saved after every cell: the first cell's output means the stubborn cell is running
    while time.time() - t0 < 120 and p.poll() is None and not (out.exists() and 'started' in out.read_text()): time.sleep(0.2)
    assert p.poll() is None, p.communicate()[0][-2000:]
    time.sleep(2); p.send_signal(signal.SIGINT)
    t1 = time.time(); log = p.communicate(timeout=60)[0]
    assert p.returncode == 130 and 'interrupted' in log, log[-2000:]
    assert time.time() - t1 < 30, f'{time.time() - t1:.0f} s after Ctrl-C'
