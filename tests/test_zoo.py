"Plain behaviour of latentnb.zoo: architectures, training loop, TorchScript export (no dataset, no checkpoints)"
import pytest, torch
from latentnb.blackbox import predict_proba
from latentnb.zoo import (ConvNet4, ConvNet7, LeNet5, AlexNetSmall, ReferenceCNN, ResNet20, InceptionSmall, resnet18_cifar,
                          fit_classifier, accuracy, export_torchscript, PAIRS, CIFAR_PAIRS, pair_specs, load_pair)

GRAY = [ConvNet4, ConvNet7, LeNet5, AlexNetSmall, ReferenceCNN]

@pytest.mark.parametrize('cls', GRAY)
def test_gray_models_return_logits(cls):
    m = cls().eval()
    out = m(torch.rand(3, 1, 28, 28))
    assert out.shape == (3, 10) and out.dtype == torch.float32

def test_reference_features():
    m = ReferenceCNN().eval()
    assert m.features(torch.rand(4, 1, 28, 28)).shape == (4, m.num_features)

@pytest.mark.parametrize('build', [resnet18_cifar, ResNet20, InceptionSmall])
def test_cifar_forward_backward(build):
    m = build()
    out = m(torch.rand(2, 3, 32, 32)); assert out.shape == (2, 10)
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())

def test_pairs_vary_one_thing():
    for pairs in (PAIRS, CIFAR_PAIRS):
        assert sorted(pairs) == [1, 2, 3, 4]
    assert PAIRS[1].a.arch != PAIRS[1].b.arch
    assert PAIRS[2].a.arch == PAIRS[2].b.arch and PAIRS[2].a.augment != PAIRS[2].b.augment
    assert PAIRS[3].a.opt != PAIRS[3].b.opt
    assert PAIRS[4].a.arch == PAIRS[4].b.arch and PAIRS[4].a.opt == PAIRS[4].b.opt

def test_errors():
    with pytest.raises(ValueError, match='1, 2, 3 or 4'): load_pair('mnist', 0)
    with pytest.raises(KeyError, match='known datasets'): pair_specs('imagenet')
    with pytest.raises(ValueError, match='accepted'): fit_classifier(LeNet5(), torch.rand(4, 1, 28, 28), torch.zeros(4, dtype=torch.long), 1, opt='lbfgs')
    with pytest.raises(ValueError, match='accepted'): fit_classifier(LeNet5(), torch.rand(4, 1, 28, 28), torch.zeros(4, dtype=torch.long), 1, augment='huge')

def test_fit_predict_accuracy_deterministic():
    torch.manual_seed(0)
    x = torch.rand(64, 1, 28, 28); y = torch.arange(64) % 10
    runs = []
    for _ in range(2):
        torch.manual_seed(1); m = LeNet5()
        fit_classifier(m, x, y, epochs=2, bs=16, augment='weak', progress=False, seed=3)
        runs.append(predict_proba(m, x))
    assert torch.equal(runs[0], runs[1])
    assert torch.allclose(runs[0].sum(1), torch.ones(64), atol=1e-5)
    assert 0 <= accuracy(m, x, y) <= 1

@pytest.mark.parametrize('cls', GRAY)
def test_predict_proba_is_softmax_of_logits(cls):
    torch.manual_seed(0); m, x = cls(), torch.rand(40, 1, 28, 28)
    with torch.no_grad(): logits = m.eval()(x)
    m.train()
    p = predict_proba(m, x, bs=16)   # batches of 16 vs one batch of 40: equal up to float rounding (kernels depend on batch size)
    assert torch.allclose(p, torch.softmax(logits, 1), rtol=0, atol=1e-6) and m.training

@pytest.mark.parametrize('cls', GRAY)
def test_torchscript_same_outputs(cls, tmp_path):
    m = cls().eval(); x = torch.rand(8, 1, 28, 28)
    p = export_torchscript(m, tmp_path/'m.pt')
    sm = torch.jit.load(str(p))
    assert torch.allclose(sm(x), m(x), atol=1e-5)


# --- image shapes: every architecture builds for (C, H, W) and n_classes; 1×28×28 is what the committed checkpoints hold ---
from latentnb.zoo import VGG16, SinvadCNN, ARCHS, ModelSpec, ARGUS_SUBJECTS, ZOO_RULE, zoo_spec, argus_subject
from latentnb.data import check_img_shape, dataset_info, shape_spec
from latentnb.config import load_config

ALL = GRAY + [SinvadCNN, resnet18_cifar, ResNet20, InceptionSmall, VGG16]

@pytest.mark.parametrize('cls', ALL)
@pytest.mark.parametrize('shape', [(1, 28, 28), (3, 32, 32)])
def test_every_architecture_builds_for_the_shape(cls, shape):
    m = cls(img_shape=shape, n_classes=26).eval()
    assert m(torch.rand(2, *shape)).shape == (2, 26) and m.img_shape == shape

def test_default_modules_are_unchanged():
    "The dense layers' sizes at 1×28×28 (a changed size would break the committed checkpoints)"
    assert ConvNet4()[11].in_features == 2*16*7*7 and ConvNet7()[18].in_features == 4*16*3*3
    assert LeNet5()[7].in_features == 16*5*5 and AlexNetSmall()[15].in_features == 2*16*3*3
    assert SinvadCNN()[12].in_features == 2*32*7*7 and ReferenceCNN().body[17].in_features == 2*16*7*7
    assert ConvNet4()[0].in_channels == 1 and resnet18_cifar().conv1.in_channels == 3 and ResNet20().stem[0].in_channels == 3
    assert ConvNet4(in_ch=3).img_shape == (3, 28, 28)                 # the older argument still sets the channels

def test_bad_shapes_are_refused_by_name():
    for bad in [(3, 30, 30), (1, 28, 32), (1, 8, 8), (28, 28)]:
        with pytest.raises(ValueError, match='LeNet5: image shape'): LeNet5(img_shape=bad)
    with pytest.raises(ValueError, match='H and W multiples of 4, at least 16'): check_img_shape((3, 30, 30), **ZOO_RULE)
    assert check_img_shape((3, 64, 64), **ZOO_RULE) == (3, 64, 64)

def test_spec_builds_for_a_dataset():
    s = ModelSpec('ConvNet4', seed=3)
    assert s.build().img_shape == (1, 28, 28) and ModelSpec('ResNet20').build().img_shape == (3, 32, 32)
    a, b = s.build((3, 32, 32), 10), s.build((3, 32, 32), 10)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))          # seeded
    assert s.build(3).img_shape == (3, 28, 28)                                             # the older build(in_ch)
    assert ARGUS_SUBJECTS['VGG16'].build((3, 32, 32), 10).eval()(torch.rand(1, 3, 32, 32)).shape == (1, 10)
    with pytest.raises(ValueError, match='accepted: VGG16, ResNet18'): argus_subject('cifar10', 'AlexNet')

def test_specs_record_the_shape_only_off_28():
    ci = load_config('ci', seed_all=False)
    fields = lambda d: {k: v for k, v in zoo_spec(PAIRS[1].a, d, ci).items() if k in ('img_shape', 'n_classes')}
    assert fields('mnist') == {} and fields('fashion-mnist') == {}
    assert fields('colour-mnist') == {'img_shape': [3, 32, 32]} and fields('emnist-letters') == {'n_classes': 26}
    assert all(fields(d) == shape_spec(dataset_info(d).shape, dataset_info(d).n_classes) for d in ('mnist', 'svhn', 'emnist-letters'))
    assert 'img_shape' not in zoo_spec(PAIRS[1].a, 'mnist', ci) and zoo_spec(PAIRS[1].a, 'svhn', ci)['img_shape'] == [3, 32, 32]

def test_torchscript_traces_with_the_models_shape(tmp_path):
    class Kw(torch.nn.Module):   # a **kw forward: not scriptable, so traced with zeros of img_shape
        def __init__(self): super().__init__(); self.f, self.img_shape = torch.nn.Linear(3*32*32, 10), (3, 32, 32)
        def forward(self, x, **kw): return self.f(x.flatten(1))
    m, x = Kw().eval(), torch.rand(4, 3, 32, 32)
    assert torch.allclose(torch.jit.load(str(export_torchscript(m, tmp_path/'k.pt')))(x), m(x), atol=1e-5)
    c = LeNet5(img_shape=(3, 32, 32)).eval()
    assert torch.allclose(torch.jit.load(str(export_torchscript(c, tmp_path/'c.pt')))(x), c(x), atol=1e-5)
