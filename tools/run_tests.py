#!/usr/bin/env python
"""`make test`: notebooks clean, library in sync, nbdev_test (profile ci), pytest tests/.

Ends with one line `N passed, N failed[, N skipped]` counting notebooks (one each) and pytest tests,
and exits non-zero when anything failed.
"""
import os, re, subprocess, sys, time, xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT/'.venv'/'bin'
os.chdir(ROOT)
env = dict(os.environ, LATENTNB_PROFILE='ci', LATENTNB_THREADS=os.environ.get('LATENTNB_THREADS', '1'),
           PATH=f"{BIN}:{os.environ['PATH']}", MPLBACKEND='Agg')
passed = failed = skipped = 0
problems = []

def step(title): print(f"\n== {title}", flush=True)

def run(cmd, **kw):
    t0 = time.time()
    r = subprocess.run(cmd, env=env, text=True, capture_output=True, **kw)
    return r, time.time() - t0

def snapshot(*paths):
    "Content snapshot of the files under `paths` (works with or without uncommitted work)"
    import hashlib
    return {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for d in paths for f in sorted(Path(d).rglob('*'))
            if f.is_file() and '.ipynb_checkpoints' not in f.parts and '__pycache__' not in f.parts}

def diff(a, b): return '\n'.join(sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k)))

# 1-2. notebooks clean, library in sync: running the tool must leave the files as they are
def check_stable(title, tool, path, advice):
    global passed, failed
    step(title)
    before = snapshot(path)
    r, _ = run([str(BIN/tool)])
    after = snapshot(path)
    if r.returncode or after != before:
        failed += 1; problems.append(f'{tool} changed {path}/ ({advice}):\n' + diff(before, after) + r.stderr[-2000:])
        print(problems[-1])
    else: passed += 1; print('ok')

check_stable('nbdev_clean leaves no diff', 'nbdev_clean', 'nbs', 'commit cleaned notebooks')
check_stable('nbdev_export leaves no diff', 'nbdev_export', 'latentnb', 'export and commit')

# 3. notebooks under the ci profile
step('nbdev_test (LATENTNB_PROFILE=ci)')
n_workers = os.environ.get('NBDEV_TEST_WORKERS', '2')
cmd = [str(BIN/'nbdev_test'), '--n_workers', n_workers, '--timing', '--do_print']
t0 = time.time()
p = subprocess.Popen(cmd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
out = []
for line in p.stdout:
    out.append(line); sys.stdout.write(line); sys.stdout.flush()
p.wait()
out = ''.join(out)
completed = re.findall(r'^- Completed (.+)$', out, re.M)
failed_nbs = []
m = re.search(r'Failed On The Following Notebooks:\n=+\n((?:\t.+\n?)+)', out)
if m: failed_nbs = [l.strip() for l in m.group(1).splitlines() if l.strip()]
if p.returncode and not failed_nbs: failed_nbs = ['nbdev_test itself (exit %d)' % p.returncode]
passed += max(len(completed) - len(failed_nbs), 0); failed += len(failed_nbs)
print(f"notebooks: {len(completed)} run, {len(failed_nbs)} failed, {time.time()-t0:.0f} s")
if failed_nbs: problems.append('notebooks failed: ' + ', '.join(failed_nbs))

# 4. pytest
step('pytest tests/')
junit = ROOT/'_build'/'pytest.xml'; junit.parent.mkdir(exist_ok=True)
r = subprocess.run([str(BIN/'python'), '-m', 'pytest', 'tests', '-q', '-rs', f'--junitxml={junit}'], env=env, text=True)
if junit.exists():
    s = ET.parse(junit).getroot()
    s = s if s.tag == 'testsuite' else s.find('testsuite')
    n, f, e, sk = (int(s.get(k, 0)) for k in ('tests', 'failures', 'errors', 'skipped'))
    passed += n - f - e - sk; failed += f + e; skipped += sk
    if f + e: problems.append(f'pytest: {f} failed, {e} errors')
elif r.returncode not in (0, 5):
    failed += 1; problems.append(f'pytest exited {r.returncode} without a report')

print('\n' + ('\n'.join('FAILED: ' + p for p in problems) if problems else 'all checks passed'))
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ''))
sys.exit(1 if failed else 0)
