"""Real-browser tests: the exploration notebook in JupyterLab, and the static site, in headless Chromium.

Skipped (with the reason) only where `/usr/bin/chromium` is absent (`make test` installs Debian's `chromium`
when it can).  Everything listens on 127.0.0.1 only; every server and browser started here is stopped in
`finally` blocks.  Screenshots go to `_build/browser/*.png` (git-ignored: `figures/`
holds only what notebooks write).
"""
import json, os, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = '/usr/bin/chromium'
ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
        '--no-first-run', '--disable-component-update', '--disable-sync']
SHOTS = ROOT/'_build'/'browser'  # screenshots: git-ignored, never in figures/
NOTEBOOK = 'nbs/71_exploration.ipynb'
PY = str(ROOT/'.venv'/'bin'/'python') if (ROOT/'.venv'/'bin'/'python').exists() else sys.executable

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"{CHROMIUM} is absent: install Debian's `chromium` (make test does when apt works) to run the browser tests")

def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); return s.getsockname()[1]

def wait_http(url, timeout, proc=None):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc is not None and proc.poll() is not None: raise RuntimeError(f"server exited with {proc.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200: return
        except Exception: time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer within {timeout} s")

def stop(proc, timeout=10):
    "Stop a process started with start_new_session=True, and its children (its own process group only)"
    if proc is None or proc.poll() is not None: return
    try: os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError: return
    try: proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL); proc.wait(5)

def launch(p):
    return p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True, timeout=30_000)

@pytest.fixture(scope='module')
def playwright():
    sync_api = pytest.importorskip('playwright.sync_api')
    with sync_api.sync_playwright() as p: yield p

# ---------------------------------------------------------------------------------------------------------
# 1. the exploration notebook, run in JupyterLab

@pytest.fixture()
def lab(tmp_path):
    "JupyterLab on 127.0.0.1:<free port> with a token, serving a copy of the exploration notebook"
    port, token = free_port(), os.urandom(12).hex()
    work = tmp_path/'work'; work.mkdir()
    shutil.copy(ROOT/NOTEBOOK, work/Path(NOTEBOOK).name)  # a copy: autosave never touches nbs/
    data, cfg_dir, rt = tmp_path/'data', tmp_path/'config', tmp_path/'runtime'
    kdir = data/'kernels'/'python3'; kdir.mkdir(parents=True)
    (kdir/'kernel.json').write_text(json.dumps({'argv': [PY, '-m', 'ipykernel_launcher', '-f', '{connection_file}'],
                                                'display_name': 'latentnb (venv)', 'language': 'python'}))
    env = dict(os.environ, JUPYTER_DATA_DIR=str(data), JUPYTER_CONFIG_DIR=str(cfg_dir), JUPYTER_RUNTIME_DIR=str(rt),
               LATENTNB_PROFILE='ci', LATENTNB_THREADS='1', LATENTNB_ROOT=str(ROOT), MPLBACKEND='Agg',
               LATENTNB_SOURCE_ORDER=os.environ.get('LATENTNB_SOURCE_ORDER', 'local-first'))
    cmd = [PY, '-m', 'jupyterlab', '--no-browser', '--ip=127.0.0.1', f'--port={port}', '--port-retries=0',
           f'--IdentityProvider.token={token}', f'--ServerApp.root_dir={work}', '--LabApp.expose_app_in_browser=True',
           f'--LabApp.workspaces_dir={tmp_path/"ws"}', f'--LabApp.user_settings_dir={tmp_path/"settings"}',
           '--allow-root', '--LabApp.extension_manager=readonly', '--LabApp.news_url=None', '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate']
    for plugin, value in {'apputils-extension/notification': {'fetchNews': 'false'},
                          'docmanager-extension/plugin': {'autosave': False}}.items():
        f = tmp_path/'settings'/'@jupyterlab'/f'{plugin}.jupyterlab-settings'
        f.parent.mkdir(parents=True, exist_ok=True); f.write_text(json.dumps(value))
    log = open(tmp_path/'lab.log', 'w')
    proc = subprocess.Popen(cmd, env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        try: wait_http(f'http://127.0.0.1:{port}/api/status?token={token}', 60, proc)
        except Exception as e:
            log.flush(); raise RuntimeError(f"{e}; JupyterLab's log ends with:\n{(tmp_path/'lab.log').read_text()[-2000:]}") from None
        yield dict(url=f'http://127.0.0.1:{port}', token=token, log=tmp_path/'lab.log', nb=Path(NOTEBOOK).name)
    finally:
        stop(proc); log.close()

def check_class_picker(page, ex):
    "The class pickers: hidden for an unconditional generator, shown for the cGAN; a new class A redraws the strip"
    classes, gen = ex.locator('.latentnb-classes'), ex.locator('.latentnb-generator select')
    first = gen.input_value()
    assert classes.is_hidden(), f"the class pickers show for the unconditional generator {first!r}"
    options = gen.locator('option').evaluate_all('os => os.map(o => o.value)')   # values are the labels (texts use &nbsp;)
    cgan = next((o for o in options if o.startswith('cGAN')), None)
    assert cgan, f"the generator dropdown offers no conditional GAN: {options}"
    gen.select_option(value=cgan)
    classes.wait_for(state='visible', timeout=30_000)
    strip, status = ex.locator('img.latentnb-strip'), ex.locator('.latentnb-status')
    page.wait_for_function('([el, g]) => el.innerText.startsWith(g)', arg=[status.element_handle(), cgan], timeout=30_000)
    src0, shot0 = strip.get_attribute('src'), strip.screenshot()
    pick_a = ex.locator('.latentnb-class-a select')
    new = '7' if pick_a.input_value() != '7' else '2'   # the class names: '0'..'9' in the notebook
    pick_a.select_option(value=new)
    page.wait_for_function('([el, s]) => el.getAttribute("src") !== s', arg=[strip.element_handle(), src0], timeout=30_000)
    page.wait_for_timeout(500)
    assert strip.screenshot() != shot0, "the strip did not change after picking another class A"
    assert f'classes A = {new}' in status.inner_text(), f"the status does not name class A = {new}: {status.inner_text()}"
    ex.screenshot(path=str(SHOTS/'explorer_classes.png'))
    gen.select_option(value=first)                       # back to the unconditional generator: the pickers hide
    classes.wait_for(state='hidden', timeout=30_000)

def test_exploration_notebook_in_jupyterlab(playwright, lab):
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser = launch(playwright)
    try:
        page = browser.new_page(viewport={'width': 1400, 'height': 1000})
        page.set_default_timeout(60_000)
        page.goto(f"{lab['url']}/lab/tree/{lab['nb']}?token={lab['token']}", wait_until='domcontentloaded')
        page.wait_for_function('() => window.jupyterapp && document.querySelector(".jp-NotebookPanel .jp-Notebook")', timeout=90_000)
        for _ in range(20):  # a kernel chooser may pop up when the notebook names no kernel
            if page.locator('.jp-Dialog .jp-mod-accept').count(): page.locator('.jp-Dialog .jp-mod-accept').first.click()
            ready = page.evaluate('''() => { const w = window.jupyterapp.shell.currentWidget;
                return !!(w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel
                          && w.sessionContext.session.kernel.status === 'idle'); }''')
            if ready: break
            page.wait_for_timeout(1000)
        page.evaluate('() => window.jupyterapp.commands.execute("notebook:run-all-cells")')
        # the notebook ends with a second view of the explorer; wait for it, then for the kernel to be idle
        page.wait_for_function('() => document.querySelectorAll(".latentnb-explorer img.latentnb-current").length >= 2', timeout=120_000)
        page.wait_for_function('''() => { const w = window.jupyterapp.shell.currentWidget;
            return w.sessionContext.session.kernel.status === 'idle'; }''', timeout=60_000)
        errors = page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"] .ansi-red-fg, .jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]')
        assert errors.count() == 0, f"the notebook raised: {errors.first.inner_text()[:500]}"
        ex = page.locator('.latentnb-explorer').first
        ex.scroll_into_view_if_needed()
        img = ex.locator('img.latentnb-current')
        bars = ex.locator('.latentnb-bars')
        src0, text0, shot0 = img.get_attribute('src'), bars.inner_text(), img.screenshot()
        ex.screenshot(path=str(SHOTS/'explorer_before.png'))
        # move the t slider with the mouse: drag its handle to the far end of the track (right, or left when it is right already)
        slider = ex.locator('.widget-slider').first
        t0 = float(ex.locator('.widget-readout').first.inner_text())
        handle, track = slider.locator('.noUi-handle').first, slider.locator('.noUi-target').first
        hb, tb = handle.bounding_box(), track.bounding_box()
        page.mouse.move(hb['x'] + hb['width']/2, hb['y'] + hb['height']/2)
        page.mouse.down()
        page.mouse.move(tb['x'] + (0.02 if t0 > 0.5 else 0.98)*tb['width'], hb['y'] + hb['height']/2, steps=8)
        page.mouse.up()
        page.wait_for_function('([el, s]) => el.getAttribute("src") !== s', arg=[img.element_handle(), src0], timeout=20_000)
        page.wait_for_timeout(500)
        text1, shot1 = bars.inner_text(), img.screenshot()
        ex.screenshot(path=str(SHOTS/'explorer_after.png'))
        page.screenshot(path=str(SHOTS/'jupyterlab.png'))
        t1 = float(ex.locator('.widget-readout').first.inner_text())
        assert abs(t1 - t0) > 0.4, f"the slider did not move: t {t0} -> {t1}"
        assert shot1 != shot0, "the decoded image did not change after moving t"
        assert text1 != text0, "the labels/probabilities did not change after moving t"
        check_class_picker(page, ex)
    except Exception:
        try: page.screenshot(path=str(SHOTS/'failure.png'))
        except Exception: pass
        print("JupyterLab's log ends with:\n" + lab['log'].read_text()[-3000:])
        raise
    finally:
        browser.close()

# ---------------------------------------------------------------------------------------------------------
# 2. the static site

def _site_dir(tmp_root:Path) -> Path:
    "`_site/` when `make site` built one; else a small site built now (the exploration notebook and a plain index, profile ci)"
    if (ROOT/'_site'/'pages.txt').exists(): return ROOT/'_site'
    out = tmp_root/'site'
    env = dict(os.environ, LATENTNB_PROFILE='ci', LATENTNB_THREADS='1', MPLBACKEND='Agg')
    r = subprocess.run([PY, str(ROOT/'tools'/'site.py'), '--out', str(out), '--executed', str(tmp_root/'executed'),
                        '--only', '71_exploration.ipynb'], env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, f"tools/site.py failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return out

@pytest.fixture(scope='module')
def site(tmp_path_factory):
    "The site served by a static HTTP server on 127.0.0.1"
    out = _site_dir(tmp_path_factory.mktemp('site'))
    if not (out/'_static'/'html-manager'/'embed-amd.js').exists():
        pytest.skip(f"{out} loads its scripts from CDNs (npm was not available to vendor them): not checkable offline")
    port = free_port()
    proc = subprocess.Popen([PY, '-m', 'http.server', str(port), '--bind', '127.0.0.1', '--directory', str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_http(f'http://127.0.0.1:{port}/index.html', 20, proc)
        yield dict(url=f'http://127.0.0.1:{port}', dir=out, pages=(out/'pages.txt').read_text().split())
    finally: stop(proc)

def check_page(page, name, errors, resp, site, checked) -> list:
    "Problems of one site page: HTTP status, console errors, images not loaded, widgets not rendered"
    problems = []
    if resp is None or resp.status != 200: return [f'{name}: HTTP {resp and resp.status}']
    page.wait_for_load_state('load', timeout=60_000)
    html = (site['dir']/name).read_text()
    if 'application/vnd.jupyter.widget-state+json' in html and 'widget-view+json' in html:
        try: page.wait_for_selector('.jupyter-widgets', timeout=30_000)
        except Exception: problems.append(f'{name}: the embedded widgets did not render from their saved state')
    page.wait_for_timeout(500)
    imgs = page.evaluate('''() => [...document.querySelectorAll('.jp-Cell img, .jp-OutputArea img, img.widget-image')]
                             .map(i => [i.currentSrc || i.src || '', i.complete, i.naturalWidth])''')
    broken = [s[:80] for s, done, w in imgs if not done or w == 0]
    if broken: problems.append(f'{name}: {len(broken)} image(s) did not load: {broken[:3]}')
    n_html_imgs = html.count('<img ')
    if len(imgs) < n_html_imgs: problems.append(f'{name}: {n_html_imgs} figures in its HTML but {len(imgs)} shown')
    if errors: problems.append(f'{name}: console errors: {errors[:3]}')
    if name == 'index.html': page.screenshot(path=str(SHOTS/'site_index.png'))
    if page.locator('.latentnb-explorer').count():
        page.locator('.latentnb-explorer').first.screenshot(path=str(SHOTS/f'site_{name[:-5]}_explorer.png'))
    checked.append((name, len(imgs)))
    return problems

def test_site_pages_load_without_console_errors(playwright, site):
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser = launch(playwright)
    problems, checked = [], []
    try:
        ctx = browser.new_context(viewport={'width': 1400, 'height': 1000})
        # the site must be self-contained: any request leaving 127.0.0.1 is a failure
        outside = []
        ctx.route(lambda url: not url.startswith(site['url']) and not url.startswith('data:') and not url.startswith('blob:'),
                  lambda route: (outside.append(route.request.url), route.abort()))
        names = ['index.html'] + [p for p in site['pages'] if p != 'index.html']
        for b0 in range(0, len(names), 4):  # four pages load at a time
            batch = []
            for name in names[b0:b0+4]:
                page, errors = ctx.new_page(), []
                page.on('console', lambda m, e=errors: m.type == 'error' and e.append(m.text))
                page.on('pageerror', lambda exc, e=errors: e.append(f'uncaught: {exc}'))
                resp = page.goto(f"{site['url']}/{name}", wait_until='commit', timeout=60_000)
                batch.append((name, page, errors, resp))
            for name, page, errors, resp in batch:
                problems += check_page(page, name, errors, resp, site, checked)
                page.close()
        if outside: problems.append(f'requests left 127.0.0.1: {sorted(set(outside))[:5]}')
    finally:
        browser.close()
    assert checked, 'no page was checked'
    assert not problems, '\n'.join(problems)
