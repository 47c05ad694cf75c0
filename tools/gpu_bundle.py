#!/usr/bin/env python
"""`make gpu-bundle`: what `tools/gpu_check.py` needs on a bare GPU machine, in one folder under 60 MiB: `_build/gpu-bundle/`.

The device tool copies a working tree of at most 64 MiB; the tracked tree is far bigger (the committed checkpoints). The
bundle holds only what the check reads:
  1. code: every git-tracked file under latentnb/, tools/gpu_check.py, benchmarks/paper_memory.py, settings.ini;
  2. data: the files the check's dry run opened (`gpu_check.py --dry-run --record-files`, run here in a subprocess, or an
     existing list with `--files LIST`), less code, .pyc, build outputs and the environment; listed biggest first;
  3. wheels/: the distributions that run imported (mapped at its exit by `importlib.metadata.packages_distributions`) and that
     the GPU machine lacks (`GPU_HAS`), at this venv's versions, for CPython 3.12 on x86-64 Linux; downloaded once into
     `_build/wheels-cache/` (`--no-wheels` skips them); compiled extensions stripped of their debug info (a third the size);
  4. README.md: the commit, the sizes, the one line that installs the wheels offline and starts the check, and the
     device-tool recipe: the first sparse checkout (`SPARSE`) that, with the bundle, fits in the tool's 64 MiB.
It exits non-zero if the bundle is over 60 MiB, naming the biggest items. `--check` then runs the dry run's correctness and
giftbench steps from a copy of the bundle in /tmp (this venv's packages, the bundle's code and data alone) and fails if
that run fails or opens a file of this checkout outside the venv.

    python tools/gpu_bundle.py [--files LIST] [--no-wheels] [--check]
"""
import argparse, base64, datetime, hashlib, json, os, re, shutil, subprocess, sys, tempfile, textwrap, zipfile
import importlib.metadata as md
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path: sys.path.insert(0, str(ROOT))
from latentnb.report import code_commit   # the commit as every result states it ('+dirty' with uncommitted changes)
OUT, CACHE = ROOT/'_build'/'gpu-bundle', ROOT/'_build'/'wheels-cache'
FILES_LIST = ROOT/'_build'/'gpu-bundle-files.txt'   # the dry run's file list; the distributions it imported in FILES_LIST.dists.json
LIMIT_MIB = 60
CODE = ['tools/gpu_check.py', 'benchmarks/paper_memory.py', 'settings.ini']   # beside every git-tracked file under latentnb/
NOT_DATA = ('_build/', '.venv/', 'latentnb.egg-info/')   # build outputs, the environment, pip's record of the editable install
# The Python distributions already on the GPU machine (kind nvidia-h200, image 'cuda'; python3 is CPython 3.12.3):
# /work/.library/device/KINDS.md, paragraph "Python packages already there" (as read there on 2026-11-17).
GPU_HAS = set("""
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi charset-normalizer
chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder cuda-toolkit cupy-cuda13x cycler
cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools formulaic frozenlist fsspec gpytorch grpcio
h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt
jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax
llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict
multipledispatch mypy-extensions nanobind narwhals networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti
nvidia-cuda-nvrtc nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse
nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime
onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy peft
pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing
pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist python-dateutil
pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image scikit-learn scipy seaborn
sentencepiece sentence-transformers setuptools shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard
tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq
torch-geometric torchmetrics torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop
wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp""".split())
# Sparse-checkout patterns (git, --no-cone) for the device tool's call, the least taken out first: which tracked files they keep
SPARSE = {"'/*' '!/data/checkpoints/'": lambda f: not f.startswith('data/checkpoints/'), "'/*' '!/*/'": lambda f: '/' not in f}
TOOL_MIB = 64   # the device tool's limit on the working tree it copies, carried folders included
PLATFORMS = ['manylinux_2_28_x86_64', 'manylinux_2_27_x86_64', 'manylinux_2_17_x86_64', 'manylinux2014_x86_64', 'manylinux1_x86_64', 'any']
MORE_PLATFORMS = [f'manylinux_2_{n}_x86_64' for n in range(5, 40) if n not in (17, 27, 28)]   # pip matches each N exactly
TARGET = dict(python_version='3.12', python_full_version='3.12.3', implementation_name='cpython', platform_python_implementation='CPython',
              sys_platform='linux', platform_system='Linux', platform_machine='x86_64', os_name='posix', extra='')
INSTALL = 'python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site wheels/*.whl'
START = 'PYTHONPATH=/tmp/site:$PWD LATENTNB_ROOT=$PWD python3 tools/gpu_check.py --out results'
# The device tool's command: the two above from the carried bundle, then the results into $OUT (the rq step's runs stay behind)
DEVICE_CMD = f'cd _build/gpu-bundle && {INSTALL} && {START}; rc=$?; cp results/*.json results/*.md results/*.png "$OUT"/; exit $rc'
# Run as `python -c RECORDER DISTS_JSON SCRIPT ARGS...`: SCRIPT as __main__, then at exit the distributions of every module imported
RECORDER = '''
import atexit, json, runpy, sys, importlib.metadata as md
out, sys.argv = sys.argv[1], sys.argv[2:]
def dists():
    pd = md.packages_distributions()
    json.dump(sorted({d for m in list(sys.modules) for d in pd.get(m.partition('.')[0], [])}), open(out, 'w'), indent=0)
atexit.register(dists)
runpy.run_path(sys.argv[0], run_name='__main__')
'''
# Run as `python -c WATCH LOG SCRIPT ARGS...`: SCRIPT as __main__, logging each file it opens under $WATCH_ROOT outside $WATCH_SKIP
WATCH = '''
import os, runpy, sys
log, sys.argv = open(sys.argv[1], 'w'), sys.argv[2:]
root, skip = os.environ.pop('WATCH_ROOT') + os.sep, os.environ.pop('WATCH_SKIP') + os.sep
def hook(event, args):
    if event == 'open' and isinstance(args[0], str):
        p = os.path.abspath(args[0])
        if p.startswith(root) and not p.startswith(skip): log.write(p + '\\n'); log.flush()
sys.addaudithook(hook)
runpy.run_path(sys.argv[0], run_name='__main__')
'''

def norm(name:str) -> str: return re.sub(r'[-_.]+', '-', name).lower()
def mib(n:int) -> str: return f'{n/2**20:.1f} MiB'
def git(*args) -> str: return subprocess.run(['git', *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout
def size(paths) -> int: return sum(p.stat().st_size for p in paths)

def code_files() -> list:
    "Every git-tracked file under latentnb/ and `CODE`, as they are in the working tree"
    files = git('ls-files', '-z', 'latentnb').split('\0')[:-1] + CODE
    if gone := [f for f in files if not (ROOT/f).is_file()]: print(f'warning: tracked but not in the working tree: {", ".join(gone)}')
    return [f for f in files if (ROOT/f).is_file()]

def record(files:Path):
    "The check's dry run here, writing `files` (what it opened) and `files`.dists.json (what it imported)"
    print('== gpu_check.py --dry-run, recording what it opens and imports (about a minute)', flush=True)
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, '-c', RECORDER, f'{files}.dists.json', 'tools/gpu_check.py', '--dry-run', '--record-files', str(files),
               '--out', out]
        if rc := subprocess.run(cmd, cwd=ROOT).returncode: sys.exit(f'error: the dry run failed (exit {rc}), so its list may be short')

def data_files(files:Path, code:set) -> list:
    "The files in the list `files` that are data: not code already copied, not .pyc, not under `NOT_DATA`"
    names = [l.strip() for l in files.read_text().splitlines() if l.strip()]
    keep = [f for f in names if f not in code and not f.endswith('.pyc') and not f.startswith(NOT_DATA) and (ROOT/f).is_file()]
    return sorted(keep, key=lambda f: -(ROOT/f).stat().st_size)

def imported_dists(files:Path) -> list:
    "The distributions the recorded run imported that the GPU machine lacks (latentnb itself aside)"
    p = Path(f'{files}.dists.json')
    if not p.exists(): sys.exit(f'error: no {p.name} beside {files} (written by a run without --files): which wheels is unknown; '
                                'run without --files, or add --no-wheels')
    return sorted({d for d in json.loads(p.read_text()) if norm(d) not in GPU_HAS | {'latentnb'}}, key=norm)

def locked() -> dict:
    lines = (ROOT/'requirements.lock').read_text().splitlines()
    return {norm(n): v for n, _, v in (l.partition('==') for l in lines if '==' in l and not l.startswith('#'))}

def cached(name:str, ver:str):
    return next((w for w in CACHE.glob('*.whl') if [norm(x) for x in w.name.split('-')[:2]] == [norm(name), norm(ver)]), None)

def download(name:str, ver:str) -> Path:
    "The wheel of name==ver for CPython 3.12 on x86-64 Linux, from the cache or pip"
    if w := cached(name, ver): return w
    for i, plats in enumerate((PLATFORMS, PLATFORMS + MORE_PLATFORMS)):
        cmd = [sys.executable, '-m', 'pip', 'download', '-q', '--disable-pip-version-check', '--no-deps', '--only-binary=:all:',
               '--python-version', '3.12', '--implementation', 'cp', *(a for p in plats for a in ('--platform', p)), '-d', str(CACHE),
               f'{name}=={ver}']
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode == 0 and (w := cached(name, ver)): return w
        if i == 0: print(f'   NOTE: {name}=={ver} has no cp312 wheel for manylinux_2_17/2_27/2_28 or any; trying manylinux_2_N, N 5..39')
    sys.exit(f'error: no wheel of {name}=={ver} for CPython 3.12 on x86-64 Linux:\n{r.stderr.strip()[-2000:]}')

def stripped(whl:Path, dest:Path) -> Path:
    "`whl` into `dest`, the debug info of its compiled extensions stripped (`strip --strip-debug`, RECORD rewritten), else as it is"
    out = dest/whl.name
    with zipfile.ZipFile(whl) as z: data = {i.filename: z.read(i) for i in z.infolist()}; infos = z.infolist()
    if not shutil.which('strip') or not any(n.endswith('.so') for n in data): return Path(shutil.copy2(whl, out))
    with tempfile.TemporaryDirectory() as d:
        for n in [n for n in data if n.endswith('.so')]:
            (f := Path(d)/'x.so').write_bytes(data[n])
            if subprocess.run(['strip', '--strip-debug', str(f)], capture_output=True).returncode == 0: data[n] = f.read_bytes()
    digest = lambda b: base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()
    rec = next(n for n in data if n.endswith('.dist-info/RECORD'))
    data[rec] = ''.join(f'{n},sha256={digest(b)},{len(b)}\n' for n, b in data.items() if n != rec and not n.endswith('/')) + f'{rec},,\n'
    with zipfile.ZipFile(out, 'w') as z:
        for i in infos: z.writestr(i, data[i.filename], compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return out

def requires(whl:Path) -> set:
    "Normalised names of what `whl` requires on the GPU machine (markers evaluated for CPython 3.12 on Linux, no extras)"
    from packaging.requirements import Requirement
    with zipfile.ZipFile(whl) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith('.dist-info/METADATA'))).decode()
    reqs = [Requirement(l.split(':', 1)[1]) for l in meta.splitlines() if l.startswith('Requires-Dist:')]
    return {norm(r.name) for r in reqs if not r.marker or r.marker.evaluate(TARGET)}

def wheels(dists:list, dest:Path) -> list:
    "Copy into `dest` the wheels of `dists`, at this venv's versions"
    CACHE.mkdir(parents=True, exist_ok=True); dest.mkdir(parents=True)
    lock, out = locked(), []
    for name in dists:
        ver = md.version(name)
        if lock.get(norm(name), ver) != ver: print(f'   warning: {name} is {ver} in .venv but {lock[norm(name)]} in requirements.lock')
        out.append(stripped(download(name, ver), dest))
    have = GPU_HAS | {norm(w.name.split('-')[0]) for w in out}
    if unmet := sorted({r for w in out for r in requires(w)} - have):
        print(f'   note: required by these wheels, absent on the GPU machine, not imported in the dry run, not carried: {", ".join(unmet)}')
    return out

def copy(rel:str, dest:Path):
    (dest/rel).parent.mkdir(parents=True, exist_ok=True); shutil.copy2(ROOT/rel, dest/rel)

def travelling(keep) -> int:
    "Bytes the device tool sends from this checkout sparse-checked-out to the tracked files `keep` accepts (+ modified, untracked)"
    files = {f for f in git('ls-files', '-z').split('\0') if keep(f)} | set(git('ls-files', '-z', '-mo', '--exclude-standard').split('\0'))
    return size(p for f in files if f and (p := ROOT/f).is_file() and not p.is_symlink())

def readme(sizes:dict, wheel_list:list) -> str:
    commit, total = code_commit(ROOT), sizes['total']
    tree = {pat: travelling(keep) for pat, keep in SPARSE.items()}
    pat = next((p for p, t in tree.items() if t + total <= TOOL_MIB * 2**20), list(SPARSE)[-1])
    fits = 'it fits' if tree[pat] + total <= TOOL_MIB * 2**20 else 'NONE FITS: make the bundle smaller first'
    ws = '\n'.join(f'- {w.name} ({mib(w.stat().st_size)})' for w in wheel_list) or '- none (built with --no-wheels: the line above fails)'
    return textwrap.dedent(f'''\
    # latentnb GPU bundle

    What `tools/gpu_check.py` needs on a bare GPU machine (x86-64, CPython 3.12 with PyTorch, no network), written by
    `make gpu-bundle` (`tools/gpu_bundle.py`) from commit {commit} on {datetime.date.today()}.
    Sizes: code {mib(sizes['code'])}, data {mib(sizes['data'])}, wheels {mib(sizes['wheels'])}; {mib(total)} in all (this README aside).

    Run from inside this folder (installs the wheels offline into /tmp/site, then the check; results in results/):

        {INSTALL} && {START}

    Wheels: the distributions the check imports that the GPU machine lacks, at the versions of the venv it was built from;
    those with compiled extensions repacked with the extensions' debug info stripped (`strip --strip-debug`, RECORD rewritten):
    {textwrap.indent(ws, '    ').lstrip()}

    ## With the device tool, from the checkout

    The tracked tree is too big for the tool's {TOOL_MIB} MiB: take most of it out of the working tree for the call with a sparse
    checkout (this bundle holds all the check needs; modified and untracked files stay, and travel), carry this folder, and put
    the tree back afterwards. Measured when built, what travels besides this bundle ({mib(total)}):
    {chr(10).join(f"    - sparse patterns {p}: {mib(t)} ({mib(t + total)} with the bundle)" for p, t in tree.items()).lstrip()}
    Hence ({fits}), when nothing else uses the checkout (the files left out are gone from it meanwhile):

        git sparse-checkout set --no-cone {pat}
        run(carry=["_build/gpu-bundle"], timeout_s=600, command='{DEVICE_CMD}')
        git sparse-checkout disable

    The JSON, summary and figure come back through $OUT; results/ also holds the rq step's runs (too deep and too many for $OUT).
    ''')

def selftest(bundle:Path) -> bool:
    "The dry run's correctness and giftbench steps from a copy of the bundle in /tmp, on this venv's packages: ok and self-contained?"
    print('== self-containment: the dry run (correctness, giftbench) from a copy of the bundle in /tmp', flush=True)
    with tempfile.TemporaryDirectory() as d:
        tree, log = Path(d)/'bundle', Path(d)/'outside.txt'
        shutil.copytree(bundle, tree, ignore=shutil.ignore_patterns('wheels'))
        env = dict(PATH='/usr/bin:/bin', HOME=os.environ.get('HOME', d), PYTHONPATH=str(tree), LATENTNB_ROOT=str(tree),
                   PYTHONUNBUFFERED='1', WATCH_ROOT=str(ROOT), WATCH_SKIP=sys.prefix)
        cmd = [sys.executable, '-c', WATCH, str(log), 'tools/gpu_check.py', '--dry-run', '--steps', 'correctness,giftbench',
               '--minutes', '4', '--out', str(Path(d)/'out')]
        rc = subprocess.run(cmd, cwd=tree, env=env).returncode
        outside = sorted(set(log.read_text().split()))
    print(f"   exit {rc}; files of {ROOT} opened outside {sys.prefix}: {len(outside)}" + ''.join(f'\n     {f}' for f in outside[:20]))
    return rc == 0 and not outside

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--files', type=Path, help='an existing list of the files the check opens (default: record one with its dry run)')
    p.add_argument('--no-wheels', action='store_true', help='skip the wheels (no network needed)')
    p.add_argument('--check', action='store_true', help='then run the dry run from a copy of the bundle, to show it is self-contained')
    p.add_argument('--out', type=Path, default=OUT, help=f'the folder to write (default {OUT.relative_to(ROOT)}; emptied first)')
    a = p.parse_args(argv)
    out = a.out.resolve()
    if out.is_dir() and any(out.iterdir()) and not (out/'COMMIT').is_file():   # never empty a folder that is not a bundle
        sys.exit(f'error: {out} holds files and is not a gpu bundle (no COMMIT file): nothing was written; choose another --out')
    files = a.files.resolve() if a.files else FILES_LIST
    if not a.files: FILES_LIST.parent.mkdir(parents=True, exist_ok=True); record(FILES_LIST)
    dists = [] if a.no_wheels else imported_dists(files)
    shutil.rmtree(out, ignore_errors=True); out.mkdir(parents=True)
    code = code_files(); data = data_files(files, set(code))
    for f in code + data: copy(f, out)
    print(f'== data: {len(data)} files from {files.relative_to(ROOT) if files.is_relative_to(ROOT) else files}, biggest first')
    for f in data: print(f'   {mib((ROOT/f).stat().st_size):>10}  {f}')
    print('== wheels' + (' skipped (--no-wheels)' if a.no_wheels else ' for CPython 3.12, x86-64 Linux'), flush=True)
    wl = [] if a.no_wheels else wheels(dists, out/'wheels')
    for w in sorted(wl, key=lambda w: -w.stat().st_size): print(f'   {mib(w.stat().st_size):>10}  {w.name}')
    sizes = dict(code=size(out/f for f in code), data=size(out/f for f in data), wheels=size(wl))
    (out/'README.md').write_text(readme(sizes | dict(total=sum(sizes.values())), wl))
    (out/'COMMIT').write_text(code_commit(ROOT) + '\n')   # the check's stamp, outside git
    sizes['total'] = size(f for f in out.rglob('*') if f.is_file())
    print(f"== {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}: code {mib(sizes['code'])}, data {mib(sizes['data'])}, "
          f"wheels {mib(sizes['wheels'])}; total {mib(sizes['total'])} (limit {LIMIT_MIB} MiB)")
    if sizes['total'] > LIMIT_MIB * 2**20:
        big = sorted((f for f in out.rglob('*') if f.is_file()), key=lambda f: -f.stat().st_size)[:8]
        sys.exit(f'error: the bundle is over {LIMIT_MIB} MiB; biggest: ' + ', '.join(f'{f.relative_to(out)} {mib(f.stat().st_size)}'
                                                                             for f in big))
    if a.check and not selftest(out): sys.exit('error: the bundle is not self-contained, or its dry run failed (above)')

if __name__ == '__main__': main()
