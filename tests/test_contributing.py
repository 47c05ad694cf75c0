"CONTRIBUTING.md's worked example of a new strategy runs as written: registered by name, searched by `run_search`."
import re, sys, types
from pathlib import Path

import pytest

from latentnb.demo import demo_models
from latentnb.strategies import STRATEGIES, check_size, objective, run_search

DOC = Path(__file__).resolve().parents[1]/'CONTRIBUTING.md'

def test_the_strategy_example_runs():
    blocks = re.findall(r'```python\n(.*?)```', DOC.read_text(), re.S)
    code = next(b for b in blocks if '@register_strategy' in b)
    mod = types.ModuleType('my_strategy'); sys.modules['my_strategy'] = mod   # as the notebook's module would be
    ns = mod.__dict__
    try:
        exec(code.replace('#| export\n', ''), ns)
        assert STRATEGIES['line'] is ns['LineSearch']
        gens, (a, b), x, y = demo_models('mnist', n_components=8, n_train=500)
        r = run_search('line', next(iter(gens.values())), objective('differential', a, b, device='cpu'), budget_s=60,
                       max_evals=200, progress=False, seed=0)
        assert r.n_evals == 200 and r.history.best.notna().all()
        with pytest.raises(ValueError, match='batch must be an integer >= 1'): ns['LineSearch'](batch=0)
    finally: STRATEGIES.pop('line', None); sys.modules.pop('my_strategy', None)
