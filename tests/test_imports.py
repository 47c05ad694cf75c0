"""The library's import layering, read from the source with `ast` by `latentnb.layout` (notebook 05), which holds the one
map of layers: the shared core, one paper, or the tools beyond the papers. A module may import its own layer, the core,
and (tools only) anything; the core imports no paper and no tool module. No import cycle among the modules. An edge is
an `import`/`from` at any depth (inside functions too, relative or absolute) or a string literal naming a module,
`'latentnb.<mod>'` (or `'latentnb.<mod>.<name>'`), as `importlib.import_module`, `modules_version` or a loader table use them.
"""
from latentnb import layout
from latentnb.layout import LAYERS, PKG, allowed, cycles, edges, modules

SRC = layout.SRC

def _where(path, line): return f'{path.relative_to(SRC.parent).as_posix()}:{line}'

def test_every_module_has_a_layer():
    missing = sorted(set(modules()) - set(LAYERS))
    assert not missing, (f"modules without a layer: {missing}; add each to CORE, PAPERS, TOOLS or META in "
                         f"latentnb.layout (notebook 05; the core may import only the core)")
    stale = sorted(set(LAYERS) - set(modules()))
    assert not stale, f"latentnb.layout names modules that do not exist: {stale}; remove them from its layer map (notebook 05)"

def test_no_import_cycle():
    mods = modules(SRC); es = edges(mods); found = cycles(mods, es)
    def detail(comp):
        return '\n'.join(f'    {f} -> {t}  ({_where(p, l)}: {how})' for f, t, p, l, how in es if f in comp and t in comp)
    assert not found, f"{len(found)} import cycle(s) among latentnb modules:\n" + '\n'.join(
        f"  cycle {' <-> '.join(c)}:\n{detail(c)}" for c in found)

def test_core_imports_no_paper_or_tool():
    mods = modules(SRC); layer = lambda m: LAYERS.get(m, '?')
    bad = [(f, t, p, l, how) for f, t, p, l, how in edges(mods) if not allowed(layer(f), layer(t))]
    assert not bad, f"{len(bad)} import(s) across layers (a {{core, paper}} module imports a paper or tool it may not):\n" + '\n'.join(
        f"  {f} ({layer(f)}) -> {t} ({layer(t)})  at {_where(p, l)}: {how}" for f, t, p, l, how in bad)

def test_the_checker_sees_every_kind_of_edge(tmp_path):
    "The parser on a made-up package: a function-level import, `from . import`, a relative import, a string"
    pkg = tmp_path/PKG; (pkg/'sub').mkdir(parents=True)
    (pkg/'__init__.py').write_text(''); (pkg/'sub'/'__init__.py').write_text('')
    (pkg/'a.py').write_text('from .b import f\n')
    (pkg/'b.py').write_text('def f():\n    from latentnb import c\n')
    (pkg/'c.py').write_text("import importlib\nT = {'x': ('latentnb.sub.d', 'load')}\n")
    (pkg/'sub'/'d.py').write_text('from ..a import g\n"latentnb.a in prose is no edge"\n')
    mods = modules(pkg); es = {(f, t) for f, t, *_ in edges(mods)}
    assert set(mods) == {'__init__', 'sub', 'a', 'b', 'c', 'sub.d'}
    assert es == {('a', 'b'), ('b', 'c'), ('c', 'sub.d'), ('sub.d', 'a')}, es
    assert cycles(mods, edges(mods)) == [['a', 'b', 'c', 'sub.d']]

SECTION = {'generators': 'Generators', 'search': 'Search', 'diffgan': 'DiffGAN', 'sinvad': 'SINVAD', 'argus': 'Argus',
           'giftbench': 'GIFTbench', 'tools': 'Beyond the papers'}   # a sub-package's section of the site's sidebar

def test_the_sidebar_follows_the_packages():
    "Each module's notebook sits in its package's sidebar section (a flat core module: 'Core' or 'Interactive')"
    import re
    side = (SRC.parent/'nbs'/'sidebar.yml').read_text()
    where, sec = {}, None
    for line in side.splitlines():
        if m := re.match(r'\s*- section: (.+)', line): sec = m.group(1).strip()
        elif m := re.match(r'\s*- (\S+\.ipynb)', line): where[m.group(1)] = sec
    wrong = []
    for mod, path in modules(SRC).items():
        m = re.search(r'File to edit: (?:\.\./)+nbs/(\S+\.ipynb)', path.read_text())
        if not m: continue
        top = mod.split('.')[0]
        want = {SECTION[top]} if top in SECTION else {'Core', 'Interactive', 'Start'}
        if where.get(m.group(1)) not in want: wrong.append(f"{m.group(1)} (latentnb.{mod}): in {where.get(m.group(1))!r}, not {sorted(want)}")
    assert not wrong, "notebooks in another sidebar section than their package's (nbs/sidebar.yml):\n  " + '\n  '.join(wrong)
