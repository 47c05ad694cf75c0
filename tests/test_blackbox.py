"The black-box contract: three kinds of models, the softmax rule, the errors, the batched helpers and the probe check."
import numpy as np
import pytest
import torch
from torch import nn

from latentnb.blackbox import BlackBoxError, as_blackbox, check_pair, to_probabilities, predict_proba, predict, check_model


def _net(k=10, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(784, k)).eval()


def test_module_torchscript_and_callable_agree(tmp_path):
    net, x = _net(), torch.rand(4, 1, 28, 28)
    torch.jit.save(torch.jit.script(net), tmp_path/'m.pt')
    p_mod, p_ts = as_blackbox(net)(x), as_blackbox(tmp_path/'m.pt')(x)
    p_fn = as_blackbox(lambda a: net(torch.from_numpy(a)).detach().numpy())(x)
    assert torch.allclose(p_mod, p_ts, atol=1e-6) and torch.allclose(p_mod, p_fn, atol=1e-6)
    assert torch.allclose(p_mod.sum(1), torch.ones(4))


def test_probabilities_kept_logits_softmaxed():
    p = torch.tensor([[0.0, 1.0], [0.25, 0.75]])
    assert torch.equal(to_probabilities(p), p)
    assert torch.allclose(to_probabilities(torch.tensor([[0.0, 0.0]])), torch.tensor([[0.5, 0.5]]))
    assert torch.allclose(to_probabilities(torch.tensor([[-1.0, 1.0]])), torch.softmax(torch.tensor([[-1.0, 1.0]]), 1))


@pytest.mark.parametrize('fn, msg', [
    (lambda a: np.zeros((len(a), 10, 1)), 'expected scores (N, K)'),
    (lambda a: np.zeros((len(a) + 1, 10)), 'expected scores (N, K)'),
    (lambda a: np.full((len(a), 10), np.inf), 'non-finite'),
    (lambda a: a.reshape(len(a), 3, 32, 32), 'rejected an input of shape (2, 1, 28, 28)'),
])
def test_errors(fn, msg):
    with pytest.raises(BlackBoxError, match=msg.replace('(', r'\(').replace(')', r'\)')):
        as_blackbox(fn)(torch.rand(2, 1, 28, 28))


def test_class_count_mismatch():
    x = torch.rand(3, 1, 28, 28)
    with pytest.raises(BlackBoxError, match='disagree on the number of classes'):
        check_pair(as_blackbox(_net(10)), as_blackbox(_net(5)), x)
    bb = as_blackbox(_net(10)); bb(x)
    bb.fn = _net(5)
    with pytest.raises(BlackBoxError, match='answered 5 classes, expected 10'):
        bb(x)


def test_bad_objects():
    with pytest.raises(TypeError, match='accepted are'):
        as_blackbox(3.0)
    with pytest.raises(FileNotFoundError):
        as_blackbox('/no/such/model.pt')


def test_predict_proba_batches_on_cpu_and_keeps_training_mode():
    torch.manual_seed(0)
    net, x = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4*26*26, 10)), torch.rand(9, 1, 28, 28)
    with torch.no_grad(): logits = net.eval()(x)
    net.train()
    p = predict_proba(net, x, bs=4)
    assert net.training and p.device == torch.device('cpu') and not p.requires_grad
    assert torch.allclose(p, torch.softmax(logits, 1), atol=1e-6)
    assert torch.equal(predict(net, x, bs=4), p.argmax(1))
    assert predict_proba(net, x[:0]).shape == (0, 10)
    assert predict_proba(lambda a: np.eye(3)[np.arange(len(a)) % 3], x, bs=2).shape == (9, 3)  # any black box


def test_check_model():
    assert check_model(_net(10)).n_classes == 10
    with pytest.raises(BlackBoxError, match='answers 3 classes but mnist has 10'):
        check_model(_net(3), data='mnist')
    with pytest.raises(BlackBoxError, match='does not fit mnist.*rejected an input of shape'):
        check_model(nn.Sequential(nn.Flatten(), nn.Linear(10, 10)), data='mnist')
    with pytest.raises(BlackBoxError, match='non-finite'):
        check_model(lambda a: np.full((len(a), 10), np.nan))
    with pytest.raises(FileNotFoundError):
        check_model('/no/such/model.pt')
    net = _net(10); state = torch.random.get_rng_state()
    check_model(net, shape=(1, 28, 28))
    assert torch.equal(state, torch.random.get_rng_state())  # the probe leaves the caller's random stream alone
