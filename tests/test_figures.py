"""`figures/` holds only what notebooks write: every committed figure is saved by some notebook's `save_fig` and
appears in the run log (`figures/runs.json`) of a notebook that exists."""
import ast, json, re, subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGS = ROOT/'figures'


def committed_figures():
    out = subprocess.run(['git', '-C', str(ROOT), 'ls-files', 'figures/*.png'], capture_output=True, text=True)
    tracked = [ROOT/p for p in out.stdout.split()] if out.returncode == 0 else []
    return sorted({p for p in tracked + list(FIGS.glob('*.png')) if p.parent == FIGS})


def _name_pattern(node):
    "A regex for a figure-name argument: a string literal, or an f-string whose fields match any text"
    if isinstance(node, ast.Constant) and isinstance(node.value, str): return re.escape(node.value)
    if isinstance(node, ast.JoinedStr):
        return ''.join(re.escape(v.value) if isinstance(v, ast.Constant) else '.+' for v in node.values)
    return None


def save_fig_patterns():
    "A regex for each figure name a notebook passes to `save_fig(fig, name)`"
    pats = set()
    for nb in (ROOT/'nbs').glob('*.ipynb'):
        for c in json.loads(nb.read_text())['cells']:
            if c['cell_type'] != 'code': continue
            src = '\n'.join(l for l in ''.join(c['source']).splitlines() if not l.lstrip().startswith(('%', '!')))
            try: tree = ast.parse(src)
            except SyntaxError: continue
            for n in ast.walk(tree):
                if isinstance(n, ast.Call) and getattr(n.func, 'id', getattr(n.func, 'attr', None)) == 'save_fig':
                    arg = n.args[1] if len(n.args) > 1 else next((k.value for k in n.keywords if k.arg == 'name'), None)
                    if (pat := _name_pattern(arg)) is not None: pats.add(pat)
    return [re.compile(p + '$') for p in pats]


def test_patterns_found():
    assert len(save_fig_patterns()) > 20


def test_every_figure_is_written_by_a_notebook():
    pats = save_fig_patterns()
    orphans = [p.name for p in committed_figures() if not any(r.match(p.stem) for r in pats)]
    assert not orphans, f"figures no notebook writes (remove them or the code that made them): {orphans}"


def test_every_figure_is_in_the_run_log():
    log = json.loads((FIGS/'runs.json').read_text())
    logged = {f for r in log if (ROOT/'nbs'/r['name']).exists() for f in r['figures']}
    missing = [p.name for p in committed_figures() if p.name not in logged]
    assert not missing, f"figures no notebook's last run wrote (figures/runs.json): {missing}"


def test_the_check_can_fail():
    pats = save_fig_patterns()
    assert not any(r.match('browser_site_index') for r in pats)
