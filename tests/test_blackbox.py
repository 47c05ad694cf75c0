"The black-box contract: three kinds of models, the softmax rule and the errors."
import numpy as np
import pytest
import torch
from torch import nn

from latentnb.blackbox import BlackBoxError, as_blackbox, check_pair, to_probabilities


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
