"""The project's interpreter running collectives on eight devices against XLA on the CPU with eight host
devices: the per-device modules JAX compiles for pmap and shard_map (all-reduce with add/max/min,
all-gather, reduce-scatter, all-to-all, collective-permute, partition-id), over groups, meshes and shapes
that are not multiples of the lanes."""

import os

# Eight CPU devices, as a v2-8 has eight cores; must be set before JAX starts.
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

import _tpusim  # noqa: E402

DEVICES = 8


def per_device_module(compiled) -> str:
    """The HLO text XLA compiled for one device of a pmap / shard_map (every device runs the same)."""
    return compiled.as_text()


def random_array(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1000, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


def assert_close(got, expected):
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, got.dtype, expected.shape)
    if np.issubdtype(expected.dtype, np.integer):
        np.testing.assert_array_equal(got, expected)
    else:
        # Eight f32 values summed in another order differ in the last bits only.
        scale = max(float(np.max(np.abs(expected), initial=0)), 1.0)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6 * scale)


def check_pmap(fun, *stacked, **pmap_kwargs):
    """Runs fun under pmap on XLA's eight CPU devices and the module on the interpreter's eight devices."""
    mapped = jax.pmap(fun, axis_name="i", **pmap_kwargs)
    expected = jax.tree_util.tree_leaves(mapped(*stacked))
    text = per_device_module(mapped.lower(*stacked).compile())
    # pmap's compiled module takes each device's slice with a leading dimension of one.
    arguments = [[np.asarray(a)[d:d + 1] for a in stacked] for d in range(DEVICES)]
    outputs = _tpusim.interpret_replicated(text, arguments)
    assert len(outputs) == DEVICES
    for d in range(DEVICES):
        assert len(outputs[d]) == len(expected)
        for got, want in zip(outputs[d], expected):
            assert_close(np.asarray(got).reshape(want[d].shape), np.asarray(want[d]))
    return text


@pytest.mark.parametrize("shape", [(8,), (3, 5), (2, 3, 9), (130,)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_all_reduce_add_max_min(shape, dtype):
    x = random_array((DEVICES,) + shape, dtype, seed=sum(shape))
    text = check_pmap(lambda v: (lax.psum(v, "i"), lax.pmax(v, "i"), lax.pmin(v, "i")), x)
    assert "all-reduce(" in text


@pytest.mark.parametrize("groups", [[[0, 1, 2, 3], [4, 5, 6, 7]], [[0, 2, 4, 6], [1, 3, 5, 7]],
                                    [[0, 1], [2, 3], [4, 5], [6, 7]]])
def test_all_reduce_over_groups(groups):
    x = random_array((DEVICES, 5, 3), np.float32, seed=len(groups))
    text = check_pmap(lambda v: lax.psum(v, "i", axis_index_groups=groups), x)
    assert "replica_groups={{" + ",".join(str(i) for i in groups[0]) in text


@pytest.mark.parametrize("axis,tiled", [(0, False), (0, True), (1, True)])
def test_all_gather(axis, tiled):
    x = random_array((DEVICES, 3, 5), np.float32, seed=axis)
    text = check_pmap(lambda v: lax.all_gather(v, "i", axis=axis, tiled=tiled), x)
    assert "all-gather(" in text


@pytest.mark.parametrize("dimension", [0, 1])
def test_reduce_scatter(dimension):
    x = random_array((DEVICES, 16, 24), np.float32, seed=dimension)
    text = check_pmap(lambda v: lax.psum_scatter(v, "i", scatter_dimension=dimension, tiled=True), x)
    assert "reduce-scatter(" in text


def test_all_to_all():
    x = random_array((DEVICES, 8, 3), np.float32, seed=3)
    text = check_pmap(lambda v: lax.all_to_all(v, "i", split_axis=0, concat_axis=0, tiled=True), x)
    assert "all-to-all(" in text


@pytest.mark.parametrize("pairs", [[(d, (d + 1) % DEVICES) for d in range(DEVICES)],
                                   [(0, 5), (5, 2), (2, 0), (7, 6)]])
def test_collective_permute(pairs):
    x = random_array((DEVICES, 7), np.float32, seed=len(pairs))
    text = check_pmap(lambda v: lax.ppermute(v, "i", pairs), x)
    assert "collective-permute(" in text


def test_axis_index_and_a_data_parallel_step():
    # Each device's gradient of a squared error, averaged over the devices: what a data-parallel step does.
    w = random_array((DEVICES, 6, 4), np.float32, seed=1)
    w[:] = w[0]
    x = random_array((DEVICES, 5, 6), np.float32, seed=2)

    def step(w, x):
        grad = jax.grad(lambda w: ((x @ w) ** 2).mean())(w)
        return w - 0.1 * lax.pmean(grad, "i"), lax.axis_index("i")

    check_pmap(step, w, x)


def test_shard_map_on_a_two_by_four_mesh():
    # psum over the mesh's second axis only: groups of four flattened device ids.
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    fun = jax.jit(jax.shard_map(lambda v: lax.psum(v, "y") * (lax.axis_index("x") + 1), mesh=mesh,
                                in_specs=P("x", "y"), out_specs=P("x", "y")))
    x = random_array((4, 12), np.float32, seed=9)
    sharded = jax.device_put(x, NamedSharding(mesh, P("x", "y")))
    expected = np.asarray(fun(sharded))
    compiled = fun.lower(sharded).compile()
    text = per_device_module(compiled)
    assert "num_partitions=8" in text and "use_global_device_ids=true" in text
    # Device (x, y) holds rows 2x..2x+1 and columns 3y..3y+2.
    arguments = [[x[2 * (d // 4):2 * (d // 4) + 2, 3 * (d % 4):3 * (d % 4) + 3]] for d in range(DEVICES)]
    outputs = _tpusim.interpret_replicated(text, arguments)
    for d in range(DEVICES):
        block = expected[2 * (d // 4):2 * (d // 4) + 2, 3 * (d % 4):3 * (d % 4) + 3]
        assert_close(np.asarray(outputs[d][0]), block)


def test_a_failing_device_is_named():
    # Argument lists for seven devices of an eight-device module.
    x = random_array((DEVICES, 4), np.float32, seed=0)
    text = jax.pmap(lambda v: lax.psum(v, "i"), axis_name="i").lower(x).compile().as_text()
    with pytest.raises(_tpusim.InvalidArgumentError, match="runs on 8 devices .* given arguments for 7"):
        _tpusim.interpret_replicated(text, [[x[d][None]] for d in range(7)])
