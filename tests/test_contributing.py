"CONTRIBUTING.md's worked example of a new strategy runs as written: registered by name, searched by `run_search`."
import re, sys, types
from pathlib import Path

import pytest
import torch

from latentnb.demo import demo_models
from latentnb.search import STRATEGIES, check_size, objective, run_search
import latentnb.sinvad, latentnb.giftbench, latentnb.diffgan.baseline   # the papers' strategies register on import

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


def test_the_judge_example_runs():
    "The new judge registers by its class name and serves alone as an ensemble under ci (trained and cached like the others)"
    from latentnb.config import load_config
    from latentnb.data import load_dataset
    from latentnb.judges import JUDGE_ARCHS, load_judges
    blocks = re.findall(r'```python\n(.*?)```', DOC.read_text(), re.S)
    code = next(b for b in blocks if '@register_judge_arch' in b)
    mod = types.ModuleType('my_judge'); sys.modules['my_judge'] = mod
    try:
        exec('\n'.join(l for l in code.replace('#| export\n', '').splitlines() if not l.startswith('four =')), mod.__dict__)
        assert JUDGE_ARCHS['PoolJudge'] is mod.PoolJudge
        j = load_judges('mnist', load_config('ci', seed_all=False), specs=(mod.POOL_SPEC,))
        assert list(j.members) == ['mnist-judge-pooljudge'] and j.name == 'mnist-judges[PoolJudge]'
        x, y = load_dataset('mnist', 'test')
        i = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))[:500]   # the split is sorted by class
        acc, ok = float((j.labels(x[i]) == y[i]).float().mean()), j.valid(x[i])
        print(f"PoolJudge under ci: accuracy {acc:.3f}, valid {ok.mean():.3f}")
        assert acc > 0.2 and ok.dtype == bool and 0 < ok.mean() <= 1   # better than chance (0.1) after ci's one epoch
    finally: JUDGE_ARCHS.pop('PoolJudge', None); sys.modules.pop('my_judge', None)

def test_an_unknown_judge_architecture_is_named():
    from latentnb.judges import JudgeSpec
    with pytest.raises(ValueError, match="Unknown judge architecture 'NoSuch'; registered: ") as e:
        JudgeSpec('NoSuch').build()
    for arch in ('JudgeResNet', 'SepCNN', 'WideMLP', 'VGGStyle'): assert repr(arch) in str(e.value)   # every registered one is named
