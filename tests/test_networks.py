"""Actors act with a numpy copy of the learner's networks: it must equal torch's forward."""

import numpy as np
import pytest
import torch

from learner.methods.networks import MLP, ConvNet, make_network, to_numpy
from learner.methods.numpy_net import NumpyNet


@pytest.mark.parametrize("shape,dtype", [((10, 10, 4), bool), ((9, 9, 3), np.uint8), ((48,), np.uint8),
                                         ((4,), np.float32)])
@pytest.mark.parametrize("batch", [1, 2, 5])  # 1 and 2 take the row-by-row path, 5 the matrix product
def test_numpy_forward_equals_torch(shape, dtype, batch):
    torch.manual_seed(0)
    net = make_network(shape, 6)
    rng = np.random.default_rng(0)
    obs = (rng.random((batch, *shape)) * (11 if dtype == np.uint8 else 1)).astype(dtype)
    expected = net(torch.as_tensor(obs)).detach().numpy()
    numpy_net = NumpyNet(to_numpy(net))
    np.testing.assert_allclose(numpy_net(obs), expected, rtol=1e-5, atol=1e-5)
    if numpy_net.conv:  # patches shared between nets give the same answer
        other = NumpyNet(to_numpy(make_network(shape, 6)))
        np.testing.assert_array_equal(numpy_net(obs, other.patches(obs)), numpy_net(obs))


def test_architecture_is_the_minatar_baseline():
    net = make_network((10, 10, 4), 6)
    assert isinstance(net, ConvNet)
    assert net.conv.out_channels == 16 and net.conv.kernel_size == (3, 3) and net.conv.stride == (1, 1)
    assert net.fc1.in_features == 16 * 8 * 8 and net.fc1.out_features == 128
    assert net.out.out_features == 6
    mlp = make_network((48,), 4)
    assert isinstance(mlp, MLP) and mlp.fc1.in_features == 48 and mlp.fc1.out_features == 128
