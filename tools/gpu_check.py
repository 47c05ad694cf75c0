#!/usr/bin/env python
"""`make gpu-check`: latentnb's numbers on a GPU, in one command that keeps what finished when its time runs out.

Six steps run in this order, each given a share of `--minutes` (default 9; the share of a step that ends early passes on):
  1. correctness: the library on the GPU against the same code on the CPU, same weights, same seeds: every generator's
     decode, the pair under test, the judges, and each strategy of the cross product through `run_search` (tolerances in `TOL`);
  2. search: raw generator + both models (images/s at batch 100 and 1,000) and DiffGAN's search as published and with the
     novelty fitness; search ÷ raw inside the run (`SearchResult.eval_share`) and ÷ the raw speed at the search's batch;
  3. giftbench: Table III on MNIST at 100 seeds, population 25, 250 generations (the paper's) for VAE, cGAN and the diffusion
     model (DDIM), both steps; the seeds of one generator are searched as one batch (`giftbench_search`);
  4. rq1: RQ1's cell of pair 1, DiffGAN vs DRfuzz, 3 runs each (`latentnb.diffgan.rq.rq_runs`), capped at the evaluations
     that stand for the paper's 1 h (`EVALS_1H`) and at this step's share of the time; counts of valid inputs (§3.6 filter);
  5. training: the `paper` profile's models (`benchmarks/paper_memory.py`) trained for a few steps at their `paper` batch size:
     images/s, seconds per epoch, and the peak GPU memory beside that script's estimate;
  6. widgets: the latent explorer (notebook 70) on every generator: ms per interpolation frame and per strip.
Models are the `--profile` checkpoints (default `quick`, the committed ones; `make gpu-bundle` packs exactly those this
script reads). Results: `benchmarks/gpu/<device>.json` (stamped with the device's name, the commit and the profile; written
after every step, so a run cut short keeps what finished), `benchmarks/gpu/<device>.md` and `figures/gpu_check_<device>.png`;
`--out DIR` puts all three in DIR instead (the device tool brings back $OUT).

`--dry-run` (`make gpu-check DRY_RUN=1`, run by `make test`) runs every step's code path on the CPU at `ci` scale (`SCALES`),
comparing the CPU with itself (so the correctness step is a determinism test) and writing to `_build/gpu-check-dry/`.
`--record-files F` lists in F every file under the checkout the run opened (what `make gpu-bundle` packs).

    python tools/gpu_check.py [--minutes 9] [--dry-run] [--steps correctness,search,...] [--profile quick] [--out DIR]
"""
import argparse, contextlib, copy, json, os, platform, signal, sys, tempfile, time, traceback
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path: sys.path.insert(0, str(ROOT))

# What each step does at full scale (a GPU) and at `ci` scale (the dry run on a CPU)
SCALES = dict(
    gpu=dict(n_images=1000, n_decode=256, strategy_evals=1000, raw_s=5.0, search_s=40.0, reducer=None,
             gift_seeds=100, gift_pop=25, gift_gens=250, gift_steps=('low', 'high'), rq_runs=3, rq_max_filter=400,
             train_steps=20, train_s=4.0, train_bs=None, shapes=('1×28×28', '3×32×32'), widget_n=40),
    dry=dict(n_images=64, n_decode=8, strategy_evals=200, raw_s=0.3, search_s=1.5, reducer='pca',
             gift_seeds=2, gift_pop=4, gift_gens=2, gift_steps=('low',), rq_runs=1, rq_max_filter=50,
             train_steps=1, train_s=0.5, train_bs=4, shapes=('1×28×28', '3×32×32'), widget_n=4))
WEIGHTS = dict(correctness=0.12, search=0.18, giftbench=0.30, rq1=0.25, training=0.10, widgets=0.05)   # shares of the time
# Largest CPU–GPU differences accepted (same weights and inputs; TF32 off in this step). On the dry run (CPU against
# CPU) every difference must be 0 and every count equal.
TOL = dict(pixels=1e-3, pixels_ddim=5e-3, probs=1e-4, agree=0.999, judges_agree=0.995, unique_rel=0.10)
# Evaluations standing for the paper's 1 h (DiffGAN §5.1: 1 h per run), per method: each method's evaluations/s on the
# reference 2-core CPU × 3,600 s, from benchmarks/RESULTS.md: DiffGAN 1,491/s (issue 41's seventh pass, run 2), DRfuzz
# 2,220/s (baseline_throughput.py, the batched fuzzer). Provisional until the replication report (issue 58) commits its
# conversion of budgets to evaluations.
EVALS_1H = {'DiffGAN': 1_491*3600, 'DRfuzz': 2_220*3600}


class StepTimeout(Exception): "A step ran past its share of the time"

@dataclass
class Check:
    "One gpu-check run: device, scale, deadline, and the results written after every step"
    device: object; dry: bool; profile: str; minutes: float; out_json: Path; out_md: Path; out_png: Path
    started: float = field(default_factory=time.time)
    result: dict = field(default_factory=dict)
    @property
    def S(self) -> dict: return SCALES['dry' if self.dry else 'gpu']
    @property
    def other(self):
        "The device compared with the CPU: the GPU, or the CPU itself on the dry run"
        import torch
        return self.device if self.device.type != 'cpu' else torch.device('cpu')
    def left(self) -> float: return self.minutes*60 - (time.time() - self.started)
    def row(self, name:str, /, **r):
        "Record one result row of step `name` (and write the JSON at once)"
        self.result['steps'].setdefault(name, dict(status='running', rows=[]))['rows'].append(r)
        self.save()
    def save(self):
        self.out_json.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.out_json.with_suffix('.tmp'); tmp.write_text(json.dumps(self.result, indent=1, default=str) + '\n')
        tmp.replace(self.out_json)


def sync(dev):
    import torch
    if dev.type == 'cuda': torch.cuda.synchronize()

@contextlib.contextmanager
def alarm(seconds:float):
    "Raise `StepTimeout` in the main thread after `seconds` (SIGALRM; a no-op where there is none)"
    if not hasattr(signal, 'SIGALRM'): yield; return
    def fire(*_): raise StepTimeout(f'past its share of the time ({seconds:.0f} s)')
    old = signal.signal(signal.SIGALRM, fire); signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.01))
    try: yield
    finally: signal.setitimer(signal.ITIMER_REAL, 0); signal.signal(signal.SIGALRM, old)


def mnist(ck, n=None):
    from latentnb.data import load_dataset
    return load_dataset('mnist', 'test', n=n or ck.S['n_images'])

def latents(g, x, n:int, seed:int=0):
    "`n` latents of generator `g` on the CPU: prior draws, or encoded test images for a generator without a prior (VQ-VAE)"
    import torch
    return g.sample(n, torch.Generator().manual_seed(seed)) if g.prior is not None else g.encode(x[:n]).cpu()

def generators() -> dict:
    "`{name: LatentGenerator}` of every generator kind of MNIST (importing the modules that register their loaders), on the CPU"
    import latentnb.argus, latentnb.generators.conditional, latentnb.generators.gan, latentnb.generators.vae   # noqa: F401
    from latentnb.generators.base import available_generators
    return {k: g.to('cpu') for k, g in available_generators('mnist', verbose=False).items()}

def cfg_on(ck, device):
    from latentnb.config import load_config
    return load_config(ck.profile, device=str(device), seed_all=True)


# --- 1. correctness ----------------------------------------------------------------------------------------------------
def check_row(ck, what:str, metric:str, value:float, tol:float, ok:bool, **kw):
    "A correctness row: on the dry run (CPU against CPU) only exact agreement passes"
    ck.row('correctness', check=what, metric=metric, value=value, tolerance=0.0 if ck.dry else tol, ok=bool(ok), **kw)

def correctness_generators(ck, x):
    "Every generator's decode of the same latents on the CPU and on the device"
    import torch
    for name, g in generators().items():
        n = ck.S['n_decode'] if ck.S['reducer'] is None or 'DDIM' not in name else 2; z = latents(g, x, n)   # dry: 2 DDIM images
        y = torch.arange(n) % 10 if g.conditional else None
        a = g.decode(z, y).cpu(); b = copy.deepcopy(g).to(ck.other).decode(z, y).cpu()
        d = float((a - b).abs().max()); tol = TOL['pixels_ddim' if 'DDIM' in name else 'pixels']
        check_row(ck, f'generator {name}', 'max |Δ pixel|', d, tol, d <= (0.0 if ck.dry else tol), n=n)

def correctness_models(ck, x):
    "The pair under test and the judges on the same images"
    import torch
    from latentnb.blackbox import as_blackbox
    from latentnb.judges import load_judges
    from latentnb.zoo import load_pair
    for name, m in zip(('model A', 'model B'), load_pair('mnist', 1)):
        pa = as_blackbox(m, name, 'cpu')(x); pb = as_blackbox(copy.deepcopy(m), name, ck.other)(x)
        d = float((pa - pb).abs().max()); agree = float((pa.argmax(1) == pb.argmax(1)).float().mean())
        check_row(ck, f'pair 1 {name}', 'max |Δ probability|', d, TOL['probs'], d <= (0.0 if ck.dry else TOL['probs']), n=len(x))
        check_row(ck, f'pair 1 {name}', 'label agreement', agree, TOL['agree'], agree >= (1.0 if ck.dry else TOL['agree']), n=len(x))
    j = load_judges('mnist', cfg_on(ck, 'cpu')); j2 = copy.deepcopy(j)
    for m in j2.members.values(): m.to(ck.other)
    va, vb = j.verdicts(x), j2.verdicts(x, j.rule())
    for col in ('label', 'valid'):
        agree = float((va[col].to_numpy() == vb[col].to_numpy()).mean())
        check_row(ck, f'judges {col}', 'agreement', agree, TOL['judges_agree'], agree >= (1.0 if ck.dry else TOL['judges_agree']),
                  n=len(x))

def correctness_strategies(ck, x, y):
    "Each strategy of the cross product through `run_search` on the GAN, the same seed and evaluation cap on both devices"
    from latentnb.generators.gan import load_gan
    from latentnb.search import objective, run_search, search_space
    from latentnb.tools.cross import cell_strategy_kw, cross_strategies
    from latentnb.zoo import load_pair
    G, _ = load_gan('mnist'); a, b = load_pair('mnist', 1)
    for s in cross_strategies():
        out, kw = [], cell_strategy_kw(s)
        if ck.S['reducer'] and 'policy' in kw: kw['policy'] = replace(kw['policy'], reducer=ck.S['reducer'])   # dry: no UMAP compile
        for dev in ('cpu', ck.other):
            Gd, ad, bd = (copy.deepcopy(m).to(dev) for m in (G, a, b))
            with tempfile.TemporaryDirectory() as d:
                r = run_search(s, search_space(Gd, images=(x, y)), objective('differential', ad, bd), budget_s=None,
                               max_evals=ck.S['strategy_evals'], out_dir=Path(d)/'run', seed=0, progress=False, **kw)
                first = int(r.history.unique.iloc[0]) if len(r.history) else 0
                out.append((r.n_evals, first, r.unique)); r.archive.close()
        (ea, fa, ua), (eb, fb, ub) = out
        rel = abs(ua - ub)/max(ua, ub, 1)
        ok = ea == eb and fa == fb and (ua == ub if ck.dry else rel <= TOL['unique_rel'])
        check_row(ck, f'strategy {s}', 'unique triggering, relative Δ', rel, TOL['unique_rel'], ok,
                  evaluations=(ea, eb), first_batch_unique=(fa, fb), unique=(ua, ub))

def step_correctness(ck):
    import torch
    x, y = mnist(ck)
    tf32 = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False   # float32 as on the CPU
    try:
        correctness_generators(ck, x); correctness_models(ck, x); correctness_strategies(ck, x, y)
    finally: torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32


# --- 2. search throughput ----------------------------------------------------------------------------------------------
def raw_speed(ck, G, a, b, batch:int, seconds:float) -> float:
    "Images/s of the generator + both models on batches of `batch`, decoded, quantised to 8 bits as the archive stores them"
    import torch
    from latentnb.blackbox import as_blackbox
    from latentnb.search.archive import to_uint8
    A, B = as_blackbox(a, 'A', ck.device), as_blackbox(b, 'B', ck.device)
    g = torch.Generator().manual_seed(0); n = 0
    def once():
        with torch.inference_mode():
            x = G((torch.rand(batch, G.nz, generator=g)*2 - 1).to(ck.device))
            x = to_uint8(x).float()/255; A(x); B(x)
    once(); sync(ck.device); t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds: once(); n += batch
    sync(ck.device)
    return n/(time.perf_counter() - t0)

def step_search(ck):
    "Raw speed at batch 100 and 1,000, then DiffGAN's search as published and with novelty, each for `search_s` seconds"
    from latentnb.data import load_dataset
    from latentnb.diffgan import diffgan_search
    from latentnb.generators.gan import load_gan
    from latentnb.search.fitness import ReclusterPolicy, warm_up
    from latentnb.zoo import load_pair
    cfg = cfg_on(ck, ck.device); B = cfg.budget('search'); S = ck.S
    G, _ = load_gan('mnist'); a, b = load_pair('mnist', 1); G, a, b = (m.to(ck.device).eval() for m in (G, a, b))
    reducer = S['reducer'] or B.reducer
    raw = {bs: raw_speed(ck, G, a, b, bs, S['raw_s']) for bs in (int(B.pop_size), 1000)}
    for bs, v in raw.items(): ck.row('search', run=f'raw generator + both models, batch {bs}', images_per_s=round(v, 1))
    warm = warm_up(reducer, int(B.umap_epochs))
    ck.row('search', run=f'{reducer} warm-up (excluded from the budgets)', seconds=round(warm, 1))
    real = load_dataset('mnist', 'test', n=int(B.n_seed_images))[0]
    for name, fit in (('DiffGAN as published', ('divergence', 'diversity')), ('DiffGAN with novelty', ('novelty',))):
        pol = ReclusterPolicy(reducer=reducer, n_epochs=int(B.umap_epochs), max_points=int(B.max_points))
        with tempfile.TemporaryDirectory() as d:
            s = diffgan_search(G, a, b, budget_s=S['search_s'], fitness=fit, pop_size=int(B.pop_size), policy=pol, device=ck.device,
                               out_dir=Path(d)/'run', resume=False, seed=0, progress=False, label=name,
                               seed_images=real if 'diversity' in fit else None)
            ck.row('search', run=name, images_per_s=round(s.evals_per_s, 1), evaluations=s.n_evals, seconds=round(s.seconds, 1),
                   share_evaluating=round(s.eval_share, 3), ratio_to_raw=round(s.evals_per_s/raw[int(B.pop_size)], 3),
                   unique=s.unique, unique_per_min=round(s.unique_per_min), near_duplicate_free=s.near_unique,
                   cluster_seconds=round(s.cluster_seconds, 2), ms_per_generation_else=round(
                       1000*(s.session_seconds - s.eval_seconds - s.cluster_seconds)/max(s.n_gen, 1), 2))
            s.archive.close()


# --- 3. GIFTbench Table III ------------------------------------------------------------------------------------------
def step_giftbench(ck):
    """Table III on MNIST, every generator, at `gift_seeds` seeds × `gift_pop` × `gift_gens` (the paper's 100 × 25 × 250 on a GPU):
    the diffusion model's low step first (the cell the CPU cannot run), then the others"""
    from latentnb.giftbench.core import GENERATORS, run_giftbench, table3_context
    S = ck.S; kinds = ['DDIM'] + [k for k in GENERATORS if k != 'DDIM']
    cells = [(k, st) for st in S['gift_steps'] for k in kinds]
    cells = [c for c in cells if c[0] == 'DDIM' and c[1] == 'low'] + [c for c in cells if not (c[0] == 'DDIM' and c[1] == 'low')]
    for kind, step in cells:
        ctx = table3_context(ck.profile, 'mnist', kind); gen = ctx['gen'].to(ck.device)
        if ck.device.type == 'cuda': gen.batch_size = max(gen.batch_size, S['gift_seeds']*S['gift_pop'])   # a generation, one batch
        last = [0]; t0 = time.time()
        def seen(gen, active): last[0] = gen
        try:
            row, res = run_giftbench(gen, ctx['clf'], 'mnist', S['gift_seeds'], S['gift_pop'], S['gift_gens'], step,
                                     judge=ctx['judge'], seed=0, progress=False, callback=seen)
        except StepTimeout:
            ck.row('giftbench', generator=kind, step=step, status=f'cut at generation {last[0]} of {S["gift_gens"]}',
                   seconds=round(time.time() - t0, 1)); raise
        keep = {k: v for k, v in row.items() if isinstance(v, (int, float, str)) or hasattr(v, 'item')}
        ck.row('giftbench', **keep | dict(generator=kind, step=step, seeds=S['gift_seeds'], population=S['gift_pop'],
                                          generations=S['gift_gens'], seconds=round(time.time() - t0, 1)))


# --- 4. one RQ1 cell at the paper's scale ------------------------------------------------------------------------------
def step_rq1(ck, seconds:float):
    """Pair 1, DiffGAN vs DRfuzz, `rq_runs` runs each, capped at `EVALS_1H` evaluations and at an equal share of `seconds`;
    counts of valid inputs (the §3.6 filter on a sample of `rq_max_filter`) in each run and at the evaluations all runs reached"""
    from latentnb.diffgan.rq import METHODS, rq_runs
    S = ck.S; n = S['rq_runs']*len(METHODS)
    cfg = replace(cfg_on(ck, ck.device), root=ck.out_json.parent/f'{ck.out_json.stem}-rq')   # the runs' archives, not the notebooks'
    per_run, caps = max(1.0, 0.8*seconds/n), {m: 200 if ck.dry else EVALS_1H[m] for m in METHODS}   # the rest: loading, the filter
    runs = {}
    for m in METHODS:   # each method's rows as soon as its runs end
        got = rq_runs(cfg, [('mnist', 1)], per_run, S['rq_runs'], notebook='gpu-check', max_evals=caps[m], methods=(m,), progress=False,
                      max_filter=S['rq_max_filter'])
        runs |= got
        for (_, _, _, i), r in got.items():
            ck.row('rq1', method=m, run=i, evaluations=r.result.n_evals, evaluations_1h=caps[m],
                   share_of_1h=round(r.result.n_evals/caps[m], 4), seconds=round(r.result.seconds, 1), unique=r.result.unique,
                   valid=round(r.count(), 1))
    common = min(r.result.n_evals for r in runs.values())   # the evaluations every run reached: the methods compared there
    for (_, _, m, i), r in runs.items():
        ck.row('rq1', method=m, run=i, common_evaluations=common, unique_at_common=r.count(evals=common, valid=False),
               valid_at_common=round(r.count(evals=common), 1))


# --- 5. training throughput and memory of the `paper` models -------------------------------------------------------
def paper_memory():
    "benchmarks/paper_memory.py as a module (its `models` and `saved_bytes`)"
    import importlib.util
    spec = importlib.util.spec_from_file_location('paper_memory', ROOT/'benchmarks'/'paper_memory.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod

EPOCH_IMAGES = {'1×28×28': 60_000, '3×32×32': 50_000}   # MNIST's and CIFAR-10's training splits

def step_training(ck):
    "A few Adam steps of each `paper` model at its `paper` batch size: images/s, seconds per epoch, peak memory vs the estimate"
    import torch
    pm, dev, S = paper_memory(), ck.device, ck.S
    for sname in S['shapes']:
        shape = pm.SHAPES[sname]
        with torch.device(dev): specs = pm.models(shape)
        for name, bs, mods, step in specs:
            bs = S['train_bs'] or bs
            params = [p for m in mods for p in m.parameters()]
            opt = torch.optim.Adam(params, 1e-4)
            n = sum(p.numel() for p in params); base = 0
            if dev.type == 'cuda':   # this model's peak: what it allocates on top of the rest, plus its own weights (4 bytes each)
                torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats(dev); base = torch.cuda.memory_allocated(dev) - 4*n
            with torch.device(dev):
                act = pm.saved_bytes(lambda: step(bs)); opt.step(); opt.zero_grad(set_to_none=True)   # warm-up + activations
                sync(dev); t0 = time.perf_counter(); k = 0
                while k < S['train_steps'] and (k == 0 or time.perf_counter() - t0 < S['train_s']):
                    step(bs).backward(); opt.step(); opt.zero_grad(set_to_none=True); k += 1
                sync(dev); t = time.perf_counter() - t0
            est = 1.2*(16*n + act)/2**20
            peak = (torch.cuda.max_memory_allocated(dev) - base)/2**20 if dev.type == 'cuda' else None
            ck.row('training', model=name, shape=sname, batch=bs, steps=k, images_per_s=round(bs*k/t, 1),
                   seconds_per_epoch=round(EPOCH_IMAGES[sname]/(bs*k/t), 1), peak_mb=None if peak is None else round(peak),
                   estimate_mb=round(est), peak_over_estimate=None if peak is None else round(peak/est, 2))
            del opt, params
        del specs


# --- 6. the widgets' generators ---------------------------------------------------------------------------------------
def step_widgets(ck):
    "The latent explorer on each generator: ms per frame (a `t` update) and per strip of `n_steps` frames (a refresh)"
    from latentnb.widgets import latent_explorer, time_updates
    from latentnb.zoo import load_pair
    x, y = mnist(ck, 256); a, b = load_pair('mnist', 1)
    for name, g in generators().items():
        ex = latent_explorer(g.to(ck.device), (a, b), x=x, y=y, device=ck.device, cpu_threads=None)
        t = time_updates(ex, n=ck.S['widget_n'])
        ck.row('widgets', generator=name, device=str(ck.device), ms_per_frame=round(t['update_ms'], 2),
               ms_per_strip=round(t['refresh_ms'], 2), frames_per_strip=ex.n_steps, n=t['n'])


# --- the run -----------------------------------------------------------------------------------------------------------
STEPS = dict(correctness=step_correctness, search=step_search, giftbench=step_giftbench, rq1=step_rq1, training=step_training,
             widgets=step_widgets)

MIN_SHARE, GRACE = 5.0, 1.25   # a step with fewer seconds is skipped; a step is cut at GRACE × its share

def shares(ck, names:list, weights:dict=WEIGHTS) -> dict:
    "Seconds of each remaining step: the time left split by `weights` (a step that ends early leaves its rest to the others)"
    w = sum(weights[n] for n in names)
    return {n: ck.left()*weights[n]/w for n in names}

def run_steps(ck, names:list, steps:dict=STEPS, weights:dict=WEIGHTS):
    "Run `names` in order, each within its share (cut at `GRACE` × it); a step that fails or is cut is recorded and the next one runs"
    for i, name in enumerate(names):
        share = shares(ck, names[i:], weights)[name]
        st = ck.result['steps'].setdefault(name, dict(status='running', rows=[]))
        st.update(share_s=round(share, 1)); t0 = time.time()
        print(f"== {name}: up to {share:.0f} s ({ck.left():.0f} s left in all)", flush=True)
        try:
            if share < MIN_SHARE: raise StepTimeout(f'no time left ({share:.0f} s)')
            with alarm(GRACE*share): steps[name](ck, share) if name == 'rq1' else steps[name](ck)
            st['status'] = 'ok'
        except StepTimeout as e: st.update(status='cut', error=str(e))
        except Exception as e:
            st.update(status='failed', error=f'{type(e).__name__}: {e}', traceback=traceback.format_exc()[-3000:])
            print(st['traceback'], file=sys.stderr, flush=True)
        st['seconds'] = round(time.time() - t0, 1); ck.save()
        print(f"   {st['status']} in {st['seconds']:.0f} s, {len(st['rows'])} rows{': ' + st['error'] if 'error' in st else ''}",
              flush=True)

def slug(ck) -> str:
    import torch
    name = torch.cuda.get_device_name(ck.device) if ck.device.type == 'cuda' else f'cpu-{platform.machine()}'
    return ('dry-' if ck.dry else '') + ''.join(c if c.isalnum() else '-' for c in name.lower()).strip('-')

def stamp(ck) -> dict:
    "What the results JSON says about where and from what it was computed"
    import torch
    from latentnb.report import code_commit
    dev, commit = ck.device, code_commit(ROOT)
    if commit == 'unknown' and (ROOT/'COMMIT').is_file(): commit = (ROOT/'COMMIT').read_text().strip() + ' (gpu bundle)'
    return dict(device=str(dev), device_name=torch.cuda.get_device_name(dev) if dev.type == 'cuda' else platform.processor() or 'cpu',
                torch=torch.__version__, cuda=torch.version.cuda, python=platform.python_version(), commit=commit,
                profile=ck.profile, dry_run=ck.dry, minutes=ck.minutes, scale=ck.S, tolerances=TOL, evals_1h=EVALS_1H,
                started=time.strftime('%Y-%m-%d %H:%M:%S %Z'), steps={})

def summary(ck) -> str:
    "The results as Markdown: a line per step, then its rows as a table"
    import pandas as pd
    r = ck.result
    lines = [f"# gpu-check on {r['device_name']} ({r['device']})", '',
             f"Commit {r['commit']}, profile {r['profile']}{', DRY RUN on the CPU at ci scale' if r['dry_run'] else ''}, "
             f"torch {r['torch']} (CUDA {r['cuda']}), started {r['started']}, {r['minutes']} min allowed; written by "
             f"`tools/gpu_check.py` (computed in this run, nothing reopened).", '']
    for name, st in r['steps'].items():
        lines += [f"## {name}: {st['status']} in {st.get('seconds', '?')} s (share {st.get('share_s', '?')} s)", '']
        if st.get('error'): lines += [f"> {st['error']}", '']
        if st['rows']: lines += [pd.DataFrame(st['rows']).to_markdown(index=False), '']
    return '\n'.join(lines) + '\n'

def figure(ck):
    "Images/s of the search step and of the training step, as bars"
    import matplotlib; matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    s, t = (ck.result['steps'].get(k, {}).get('rows', []) for k in ('search', 'training'))
    s, t = [r for r in s if 'images_per_s' in r], [r for r in t if 'images_per_s' in r]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, rows, key, title in ((axes[0], s, 'run', 'search (images/s)'), (axes[1], t, 'model', 'training (images/s)')):
        ax.barh([f"{r[key]}{' ' + r['shape'] if 'shape' in r else ''}" for r in rows], [r['images_per_s'] for r in rows])
        ax.set_xscale('log'); ax.set_title(title); ax.tick_params(labelsize=7)
    fig.suptitle(f"gpu-check on {ck.result['device_name']} at {ck.result['commit']}{' (dry run)' if ck.dry else ''}")
    fig.tight_layout(); ck.out_png.parent.mkdir(parents=True, exist_ok=True); fig.savefig(ck.out_png, dpi=90); plt.close(fig)

SKIP_RECORD = ('_build', '.venv', 'latentnb.egg-info')   # outputs, the environment: not what a GPU machine needs from here

def record_files(path:Path):
    "Write to `path`, at exit, every file under the checkout this process opened (an audit hook on `open`)"
    import atexit
    seen = set()
    def hook(event, args):
        if event != 'open' or not isinstance(args[0], (str, bytes, os.PathLike)): return
        mode, flags = args[1], args[2]
        if (mode and any(c in mode for c in 'wax+')) or (mode is None and flags & (os.O_WRONLY | os.O_RDWR)): return   # read only
        try: p = Path(os.fsdecode(args[0])).resolve()
        except (OSError, ValueError): return
        if p.is_relative_to(ROOT) and p.is_file() and p.suffix != '.pyc' and p.relative_to(ROOT).parts[0] not in SKIP_RECORD:
            seen.add(str(p.relative_to(ROOT)))
    sys.addaudithook(hook)
    atexit.register(lambda: Path(path).write_text(''.join(f'{f}\n' for f in sorted(seen))))

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--minutes', type=float, default=9.0, help='time for all steps (default 9: one device command is at most 10 min)')
    p.add_argument('--dry-run', action='store_true', help="every step's code path on the CPU at ci scale (make gpu-check DRY_RUN=1)")
    p.add_argument('--steps', default=','.join(STEPS), help=f"comma-separated subset of {', '.join(STEPS)}")
    p.add_argument('--profile', default='quick', help='whose checkpoints (default quick: the committed ones)')
    p.add_argument('--out', default=None, help='folder for the JSON, the summary and the figure (default: benchmarks/gpu/ and figures/)')
    p.add_argument('--record-files', default=None, help='write the files under the checkout this run opened to this file')
    a = p.parse_args(argv)
    names = [s.strip() for s in a.steps.split(',') if s.strip()]
    if bad := [s for s in names if s not in STEPS]: p.error(f"unknown step(s) {', '.join(bad)}; accepted: {', '.join(STEPS)}")
    if not a.minutes > 0: p.error(f'--minutes must be > 0, got {a.minutes}')
    if a.record_files: record_files(a.record_files)
    import torch
    if not a.dry_run and not torch.cuda.is_available():
        p.error('no CUDA device here: run it on a GPU machine (make gpu-bundle), or try its code paths with --dry-run')
    os.environ['LATENTNB_PROFILE'] = a.profile
    dev = torch.device('cpu' if a.dry_run else 'cuda')
    ck = Check(dev, a.dry_run, a.profile, a.minutes, Path(), Path(), Path())
    name = slug(ck); out = Path(a.out) if a.out else None
    if a.dry_run and out is None: out = ROOT/'_build'/'gpu-check-dry'
    ck.out_json, ck.out_md = ((out or ROOT/'benchmarks'/'gpu')/f'{name}.{x}' for x in ('json', 'md'))
    ck.out_png = (out or ROOT/'figures')/f'gpu_check_{name}.png'
    from latentnb.config import load_config
    load_config(a.profile, device=str(dev))
    ck.result = stamp(ck); ck.save()
    print(f"== gpu-check on {ck.result['device_name']}, commit {ck.result['commit']}, profile {a.profile}, {a.minutes:g} min"
          f"{', dry run' if a.dry_run else ''}; results: {ck.out_json}", flush=True)
    try: run_steps(ck, names)
    finally:
        ck.result['seconds'] = round(time.time() - ck.started, 1); ck.save()
        ck.out_md.write_text(summary(ck))
        try: figure(ck)
        except Exception as e: print(f'figure not written: {type(e).__name__}: {e}', file=sys.stderr)
    bad = {n: st['status'] for n, st in ck.result['steps'].items() if st['status'] != 'ok'}
    off = [f"{n}: {r.get('check', r)}" for n, st in ck.result['steps'].items() for r in st['rows'] if r.get('ok') is False]
    print(f"== gpu-check done in {ck.result['seconds']:.0f} s: {len(names) - len(bad)} of {len(names)} steps ok"
          f"{' (' + ', '.join(f'{k} {v}' for k, v in bad.items()) + ')' if bad else ''}; {len(off)} checks outside their tolerance"
          f"{': ' + '; '.join(off) if off else ''}\n   {ck.out_json}\n   {ck.out_md}\n   {ck.out_png}", flush=True)
    return 1 if bad or off else 0

if __name__ == '__main__': sys.exit(main())
