"""client.compile_replicated and ReplicatedExecutable.execute: one program compiled once and run on both
cores of the chip at once, each device on its own arguments and its own infeed queue."""

import os

import numpy as np
import pytest

import _tpusim

CONFIG = os.environ.get("TPU_CONFIG", "tiny")

# As JAX writes a module for two devices: the header names the grid.
AFFINE = """HloModule pmap_affine, num_partitions=2
ENTRY %main (x: f32[4,8], w: f32[8,8]) -> f32[4,8] {
  %x = f32[4,8]{1,0} parameter(0)
  %w = f32[8,8]{1,0} parameter(1)
  %y = f32[4,8]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %z = f32[4,8]{1,0} add(%y, %x)
}
"""

# Adds one infeed value to its argument.
TAKE_ONE = """HloModule take_one
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %token = token[] after-all()
  %infeed = (f32[8]{0}, token[]) infeed(%token)
  %v = f32[8]{0} get-tuple-element(%infeed), index=0
  ROOT %y = f32[8]{0} add(%x, %v)
}
"""


@pytest.fixture(scope="module")
def client():
    client = _tpusim.Client("model", CONFIG)
    if len(client.devices) < 2:
        pytest.skip(f"the {CONFIG} chip has one core")
    return client


def random(shape, seed):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def upload(client, lists):
    return [[client.buffer_from_numpy(array, device=d) for array in arrays] for d, arrays in enumerate(lists)]


def test_every_device_computes_on_its_own_arguments(client):
    exe = client.compile_replicated(AFFINE)
    assert exe.name == "pmap_affine"
    assert exe.num_devices == 2
    assert exe.devices == ["TPU:0", "TPU:1"]
    lists = [[random((4, 8), 10 + d), random((8, 8), 20 + d)] for d in range(2)]
    results = exe.execute(upload(client, lists))
    assert len(results) == 2
    got = []
    for d, (outputs, counters) in enumerate(results):
        assert outputs[0].device.name == f"TPU:{d}"
        assert counters["instructions"] > 0
        x, w = lists[d]
        got.append(outputs[0].to_numpy())
        np.testing.assert_allclose(got[-1], x @ w + x, rtol=1 / 64, atol=np.abs(x @ w + x).max() / 64)
    assert not np.array_equal(got[0], got[1])


def test_bad_argument_lists_name_the_device(client):
    exe = client.compile_replicated(AFFINE)
    buffers = upload(client, [[random((4, 8), 1), random((8, 8), 2)] for _ in range(2)])
    with pytest.raises(_tpusim.InvalidArgumentError, match="one argument list per device, got 1"):
        exe.execute(buffers[:1])
    with pytest.raises(_tpusim.InvalidArgumentError,
                       match=r"^partition 1 \(TPU:1\): argument 0 lives on TPU:0, the executable on TPU:1$"):
        exe.execute([buffers[0], buffers[0]])
    with pytest.raises(_tpusim.InvalidArgumentError, match="runs on 3 devices .*, the client has 2"):
        client.compile_replicated(AFFINE.replace("num_partitions=2", "num_partitions=3"))
    assert len(exe.execute(buffers)) == 2


def test_a_starved_replica_is_named_and_both_devices_stay_usable(client):
    exe = client.compile_replicated(TAKE_ONE, devices=[0, 1])
    assert exe.devices == ["TPU:0", "TPU:1"]
    x = [random(8, 30), random(8, 31)]
    buffers = upload(client, [[x[0]], [x[1]]])
    client.transfer_to_infeed([np.ones(8, np.float32)], device=0)
    with pytest.raises(_tpusim.DeadlineExceededError,
                       match=r"^replica 1 \(TPU:1\): take_one waited for infeed value 0 but the infeed queue is empty"):
        exe.execute(buffers)
    assert client.infeed_queue_size(1) == 0
    # TPU:0 took its value before TPU:1 failed; the next execution needs one per device.
    for d in range(2):
        client.transfer_to_infeed([np.full(8, d + 2, np.float32)], device=d)
    results = exe.execute(buffers)
    for d, (outputs, counters) in enumerate(results):
        np.testing.assert_array_equal(outputs[0].to_numpy(), x[d] + np.float32(d + 2))
        assert counters["infeed_values"] == 1
