"""The global-view modules JAX lowers pmap and shard_map to, made into the program each device runs by the
per-device-program pass (_tpusim.per_device_program), run on the interpreter's eight devices: the global
arguments cut with the pass's layouts, the devices' results put together with them, against JAX's own
results on eight CPU devices."""

import os

# Eight CPU devices for JAX's side of the comparison; must be set before JAX starts.
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

import _tpusim  # noqa: E402

DEVICES = 8


def random_array(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1000, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


def block_slices(blocks, part_shape):
    return tuple(slice(b * n, (b + 1) * n) for b, n in zip(blocks, part_shape))


def split(array, layout):
    """Each device's part of a global array."""
    array = np.asarray(array)
    part_shape = [size // pieces for size, pieces in zip(array.shape, layout["pieces"])]
    return [array[block_slices(blocks, part_shape)] for blocks in layout["device_blocks"]]


def join(parts, layout):
    """The global array from the devices' parts; devices that hold the same block must hold the same values."""
    part_shape = parts[0].shape
    joined = np.zeros([n * pieces for n, pieces in zip(part_shape, layout["pieces"])], parts[0].dtype)
    held = {}
    for part, blocks in zip(parts, layout["device_blocks"]):
        assert part.shape == part_shape
        if tuple(blocks) in held:
            np.testing.assert_array_equal(part, held[tuple(blocks)])
        held[tuple(blocks)] = part
        joined[block_slices(blocks, part_shape)] = part
    assert len(held) == np.prod(layout["pieces"]), "some block is on no device"
    return joined


def run_per_device(lowered, arguments):
    """Runs the per-device program of `lowered` on the interpreter's devices; returns the global results."""
    text, parameters, results = _tpusim.per_device_program(lowered.as_text("hlo"))
    assert f"num_partitions={DEVICES}" in text
    assert "xla.sdy" not in text and "custom-call" not in text
    assert len(parameters) == len(arguments)
    parts = [split(argument, layout) for argument, layout in zip(arguments, parameters)]
    outputs = _tpusim.interpret_replicated(text, [[p[d] for p in parts] for d in range(DEVICES)])
    assert len(outputs) == DEVICES and all(len(device) == len(results) for device in outputs)
    return [join([np.asarray(device[i]) for device in outputs], layout) for i, layout in enumerate(results)]


def assert_matches(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        e = np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
        if np.issubdtype(e.dtype, np.integer):
            np.testing.assert_array_equal(g, e)
        else:
            np.testing.assert_allclose(g, e, rtol=1e-5)


def check(fun, *arguments):
    """`fun` (a pmap, or a jit of a shard_map) run by JAX and as per-device programs on the interpreter."""
    expected = jax.tree_util.tree_leaves(fun(*arguments))
    got = run_per_device(fun.lower(*arguments), jax.tree_util.tree_leaves(arguments))
    assert_matches(got, expected)
    return got


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_psum_and_pmax_under_pmap(dtype):
    x = random_array((DEVICES, 3, 5), dtype, seed=1)
    check(jax.pmap(lambda v: (lax.psum(v, "i"), lax.pmax(v, "i")), axis_name="i"), x)


@pytest.mark.parametrize("tiled", [False, True])
def test_all_gather_under_pmap(tiled):
    x = random_array((DEVICES, 2, 3), np.float32, seed=2)
    check(jax.pmap(lambda v: lax.all_gather(v, "i", axis=1, tiled=tiled), axis_name="i"), x)


def test_psum_scatter_under_pmap():
    x = random_array((DEVICES, 16, 3), np.float32, seed=3)
    check(jax.pmap(lambda v: lax.psum_scatter(v, "i", scatter_dimension=0, tiled=True), axis_name="i"), x)


def test_ppermute_and_axis_index_under_pmap():
    x = random_array((DEVICES, 7), np.float32, seed=4)
    ring = [(d, (d + 1) % DEVICES) for d in range(DEVICES)]
    check(jax.pmap(lambda v: (lax.ppermute(v, "i", ring), lax.axis_index("i")), axis_name="i"), x)


def test_a_replicated_argument_under_pmap():
    x = random_array((DEVICES, 4, 3), np.float32, seed=5)
    w = random_array((3,), np.float32, seed=6)
    fun = jax.pmap(lambda v, w: v * w + lax.psum(w, "i"), axis_name="i", in_axes=(0, None))
    text, parameters, results = _tpusim.per_device_program(fun.lower(x, w).as_text("hlo"))
    # The replicated argument keeps its shape, and every device holds all of it.
    assert parameters[1] == {"axes": [[]], "pieces": [1], "device_blocks": [[0]] * DEVICES}
    assert parameters[0]["pieces"] == [DEVICES, 1, 1] and results[0]["pieces"] == [DEVICES, 1, 1]
    check(fun, x, w)


def test_shard_map_on_a_two_by_four_mesh_with_a_replicated_input():
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))

    def body(a, b):
        row_sums = lax.psum(a, "y") + b.sum()
        everything = lax.psum(a.sum(), ("x", "y"))  # the same on every device: out_specs P()
        return row_sums * (lax.axis_index("x") + 1), everything, lax.all_gather(a, "y", axis=1, tiled=True)

    fun = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=(P("x", "y"), P()),
                                out_specs=(P("x", "y"), P(), P("x", None)), check_vma=False))
    a = random_array((4, 12), np.float32, seed=7)
    b = random_array((5,), np.float32, seed=8)
    _, parameters, results = _tpusim.per_device_program(fun.lower(a, b).as_text("hlo"))
    assert parameters[0]["axes"] == [["x"], ["y"]] and parameters[0]["pieces"] == [2, 4]
    # Device d sits at (x, y) = (d // 4, d % 4) of the mesh.
    assert parameters[0]["device_blocks"] == [[d // 4, d % 4] for d in range(DEVICES)]
    assert parameters[1]["pieces"] == [1]
    assert [r["pieces"] for r in results] == [[2, 4], [], [2, 1]]
    check(fun, a, b)


def test_shard_map_with_a_dimension_over_both_axes():
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    fun = jax.jit(jax.shard_map(lambda a: a * (lax.axis_index("y") * 2 + lax.axis_index("x")), mesh=mesh,
                                in_specs=P(("y", "x")), out_specs=P(("y", "x"))))
    check(fun, random_array((16, 3), np.float32, seed=9))


def test_a_data_parallel_mlp_step():
    def loss(params, x, y):
        w1, b1, w2, b2 = params
        hidden = jnp.tanh(x @ w1 + b1)
        return ((hidden @ w2 + b2 - y) ** 2).mean()

    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        grads = lax.pmean(grads, "i")
        return [p - 0.1 * g for p, g in zip(params, grads)], lax.pmean(value, "i")

    params = [random_array((5, 7), np.float32, seed=10), random_array((7,), np.float32, seed=11),
              random_array((7, 2), np.float32, seed=12), random_array((2,), np.float32, seed=13)]
    x = random_array((DEVICES, 4, 5), np.float32, seed=14)
    y = random_array((DEVICES, 4, 2), np.float32, seed=15)
    w1, b1, w2, b2, value = check(jax.pmap(step, axis_name="i", in_axes=(None, 0, 0)), params, x, y)
    # Every device ends with the same bits: all-reduce gives each device of a group the same sum.
    for new in (w1, b1, w2, b2, value):
        for d in range(1, DEVICES):
            np.testing.assert_array_equal(new[d], new[0])


def test_a_module_without_a_manual_computation_comes_back_as_it_is():
    text = jax.jit(lambda a: a * 2).lower(np.zeros((8, 4), np.float32)).as_text("hlo")
    program, parameters, results = _tpusim.per_device_program(text)
    assert parameters == [] and results == []
    assert "num_partitions" not in program and "multiply(" in program


def test_a_partially_manual_shard_map_is_unimplemented():
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    fun = jax.jit(jax.shard_map(lambda a: a * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"), axis_names={"x"}))
    text = fun.lower(np.zeros((8, 4), np.float32)).as_text("hlo")
    with pytest.raises(_tpusim.UnimplementedError, match="manual computation over some of the axes"):
        _tpusim.per_device_program(text)


def test_global_view_work_on_a_cut_array_is_unimplemented():
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    inner = jax.shard_map(lambda a: a * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    text = jax.jit(lambda a: inner(a) + 1).lower(np.zeros((8, 4), np.float32)).as_text("hlo")
    with pytest.raises(_tpusim.UnimplementedError, match="outside the manual computation"):
        _tpusim.per_device_program(text)
