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
