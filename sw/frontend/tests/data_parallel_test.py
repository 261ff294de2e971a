"""Functions over several devices of the simulated TPU against XLA on the CPU: tpusim.jit of a jax.shard_map
over a tpusim mesh and tpusim.pmap (psum, pmean, a data-parallel gradient step), the runtime's global
arrays (cut by their layout, put together again, every device's part readable), and data-parallel
training with tpusim.Model(devices=N): identical replicas after every step, losses close to one device's.
Runs on 2 devices and on every device of the client when it has more."""

import io
import os

# As many CPU devices as a v2-8 has cores for XLA's side of the comparison; must be set before JAX starts.
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
import pytest  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, PartitionSpec as P  # noqa: E402

import _tpusim  # noqa: E402
import tpusim  # noqa: E402
from tpusim import data, models  # noqa: E402

CONFIG = os.environ.get("TPU_CONFIG", "tiny")
# As bridge_test: three bf16 MXU passes per f32 dot; the absolute tolerance scales with the largest value.
DOT_RTOL, DOT_ATOL = 2e-4, 2e-5


def client_devices() -> int:
    return len(tpusim.get_client("model", CONFIG).devices)


DEVICE_COUNTS = sorted({2, client_devices()})


@pytest.fixture(autouse=True)
def several_devices():
    if client_devices() < 2:
        pytest.fail(f"the {CONFIG} client has one device: data parallelism needs two")


def random(shape, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1000, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


def both(body, devices, in_specs, out_specs, **jit_kwargs):
    """The shard_map of `body` over `devices` tpusim devices (tpusim.jit) and over as many CPU devices (jax.jit)."""
    tpu_mesh = tpusim.make_mesh((devices,), ("d",))
    cpu_mesh = Mesh(np.array(jax.devices()[:devices]), ("d",))
    on_tpu = tpusim.jit(jax.shard_map(body, mesh=tpu_mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False),
                        backend="model", config=CONFIG, precision="high", **jit_kwargs)
    on_cpu = jax.jit(jax.shard_map(body, mesh=cpu_mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False),
                     **jit_kwargs)
    return on_tpu, on_cpu


def assert_close(got, expected, rtol=DOT_RTOL, atol=DOT_ATOL):
    expected = np.asarray(expected)
    got = np.asarray(got)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, got.dtype, expected.shape)
    if np.issubdtype(expected.dtype, np.integer):
        np.testing.assert_array_equal(got, expected)
    else:
        scale = max(float(np.max(np.abs(expected), initial=0)), 1.0)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol * scale)


def assert_replicas_equal(array: tpusim.Array, devices: int):
    """A replicated result: every device holds the same bits as device 0."""
    assert array.is_sharded and array.buffer.is_replicated
    values = array.device_values()
    assert len(values) == devices
    for d in range(1, devices):
        np.testing.assert_array_equal(values[d], values[0], err_msg=f"device {d} differs from device 0")


@pytest.mark.parametrize("devices", DEVICE_COUNTS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_psum_and_pmean_match_xla(devices, dtype):
    def body(x):
        total = lax.psum(x, "d")
        mean = lax.pmean(x, "d") if dtype == np.float32 else lax.psum(x * 2, "d")
        return total, mean, x * (lax.axis_index("d") + 1).astype(x.dtype)

    on_tpu, on_cpu = both(body, devices, P("d"), (P(), P(), P("d")))
    x = random((devices * 3, 5), seed=devices, dtype=dtype)  # 5 columns: not a multiple of the lanes
    got, expected = on_tpu(x), on_cpu(x)
    for g, e in zip(got, expected):
        assert_close(g, e, rtol=1e-6, atol=1e-6)
    assert_replicas_equal(got[0], devices)
    assert_replicas_equal(got[1], devices)
    # The device-dependent result: device d holds rows [3d, 3d+3).
    parts = got[2].device_values()
    for d in range(devices):
        assert_close(parts[d], np.asarray(expected[2])[3 * d:3 * d + 3], rtol=0, atol=0)
    assert on_tpu.last_counters["cycles"] == max(c["cycles"] for c in on_tpu.last_counters["devices"]) > 0


@pytest.mark.parametrize("devices", DEVICE_COUNTS)
def test_pmap_matches_jax_pmap(devices):
    def fun(v, w):
        return lax.psum(v * w, "i"), lax.pmean(v, "i") + w.sum(), v - lax.axis_index("i")

    x = random((devices, 3, 7), seed=1)
    w = random((7,), seed=2)
    on_tpu = tpusim.pmap(fun, "i", in_axes=(0, None), config=CONFIG)
    expected = jax.pmap(fun, "i", in_axes=(0, None), devices=jax.devices()[:devices])(x, w)
    got = on_tpu(x, w)
    for g, e in zip(got, expected):
        assert_close(g, e, rtol=1e-6, atol=1e-6)
    assert got[0].shape == (devices, 3, 7)
    assert len(got[0].device_values()) == devices


def mlp_loss(params, x, y, replicas):
    """compute_average_loss: the squared errors of this replica's examples summed over the global batch size
    (replicas x its examples); with one replica the batch's mean."""
    w1, b1, w2, b2 = params
    hidden = jnp.tanh(x @ w1 + b1)
    errors = jnp.sum((hidden @ w2 + b2 - y) ** 2, axis=-1)
    return jnp.sum(errors) / (x.shape[0] * replicas)


def mlp_params(seed=10):
    return [random((13, 20), seed), random((20,), seed + 1), random((20, 3), seed + 2), random((3,), seed + 3)]


def mlp_step(params, x, y):
    """Each replica's mean loss over its examples and its gradients, averaged over the replicas (pmean)."""
    loss, grads = jax.value_and_grad(mlp_loss)(params, x, y, 1)
    grads = [lax.pmean(g, "d") for g in grads]
    return [p - 0.5 * g for p, g in zip(params, grads)], lax.pmean(loss, "d")


@pytest.mark.parametrize("devices", DEVICE_COUNTS)
def test_a_data_parallel_gradient_step_matches_xla_and_keeps_replicas_equal(devices):
    on_tpu, on_cpu = both(mlp_step, devices, (P(), P("d"), P("d")), (P(), P()), donate_argnums=(0,))
    params = mlp_params()
    x, y = random((devices * 5, 13), 20), random((devices * 5, 3), 21)  # 5 examples per device
    tpu_params, cpu_params = params, [np.array(p) for p in params]
    for step in range(3):
        batch = (x * (step + 1) / 3, y)
        previous = tpu_params
        tpu_params, tpu_loss = on_tpu(tpu_params, *batch)
        cpu_params, cpu_loss = on_cpu(cpu_params, *batch)
        assert_close(tpu_loss, cpu_loss)
        for g, e in zip(tpu_params, cpu_params):
            assert_close(g, e)
            assert_replicas_equal(g, devices)
        if step > 0:
            # The parameters stayed on the devices: the step took the last step's arrays as they were and
            # was given their HBM (donated), not copies made on the host.
            assert all(p.is_deleted() for p in previous)
    assert all(p.is_sharded and not p.is_deleted() for p in tpu_params)
    # The gradients are all-reduced on the device: one all-reduce per parameter, and the loss's.
    assert on_tpu.last_hlo_text.count("all-reduce(") == 5


def test_one_device_and_two_give_the_same_step():
    """The global batch's gradient step on one device (jit) and on two (shard_map): the same values up to
    the order of the sums; prints the simulated cycles of both."""
    params = mlp_params(seed=30)
    x, y = random((64, 13), 31), random((64, 3), 32)

    def single(params, x, y):
        loss, grads = jax.value_and_grad(mlp_loss)(params, x, y, 1)
        return [p - 0.5 * g for p, g in zip(params, grads)], loss

    one = tpusim.jit(single, config=CONFIG, precision="high")
    two, _ = both(mlp_step, 2, (P(), P("d"), P("d")), (P(), P()))
    one_params, one_loss = one(params, x, y)
    two_params, two_loss = two(params, x, y)
    print(f"\nMLP step (64 examples, 13-20-3): 1 device {one.last_counters['cycles']} cycles, "
          f"2 devices {two.last_counters['cycles']} cycles (per device "
          f"{[c['cycles'] for c in two.last_counters['devices']]})")
    assert_close(two_loss, np.asarray(one_loss))
    for a, b in zip(two_params, one_params):
        assert_close(a, np.asarray(b))


def test_global_arrays_cut_and_join_on_the_host():
    client = tpusim.get_client("model", CONFIG)
    layout = {"axes": [[], ["y"]], "pieces": [1, 2], "device_blocks": [[0, 0], [0, 1]]}
    x = random((3, 10), seed=5)
    buffer = client.buffer_from_global(x, layout)
    assert buffer.shape == (3, 10) and not buffer.is_replicated
    assert [p.device.id for p in buffer.parts] == [0, 1] and [p.shape for p in buffer.parts] == [(3, 5), (3, 5)]
    np.testing.assert_array_equal(buffer.to_numpy(), x)
    parts = buffer.part_values()
    np.testing.assert_array_equal(parts[0], x[:, :5])
    np.testing.assert_array_equal(parts[1], x[:, 5:])
    # Replicated over both devices, placed on devices 1 and 0 in that order.
    replicated = client.buffer_from_global(x, {"axes": [[], []], "pieces": [1, 1], "device_blocks": [[0, 0]] * 2},
                                           devices=[1, 0])
    assert replicated.is_replicated and [p.device.id for p in replicated.parts] == [1, 0]
    np.testing.assert_array_equal(replicated.to_numpy(), x)
    with pytest.raises(_tpusim.InvalidArgumentError, match=r"dimension 1 of f32\[3,10\] does not cut into 4 equal"):
        client.buffer_from_global(x, {"axes": [[], ["y"]], "pieces": [1, 4], "device_blocks": [[0, 0], [0, 1]]})
    with pytest.raises(_tpusim.InvalidArgumentError, match="cuts 1 dimensions, the array f32\\[3,10\\] has 2"):
        client.buffer_from_global(x, {"axes": [[]], "pieces": [1], "device_blocks": [[0], [0]]})
    with pytest.raises(_tpusim.InvalidArgumentError, match="a layout is a dict"):
        client.buffer_from_global(x, {"pieces": [1, 1]})


def test_what_does_not_run_on_several_devices_is_refused():
    client = tpusim.get_client("model", CONFIG)
    plain = jax.jit(lambda a: a * 2).lower(np.zeros((4, 3), np.float32)).as_text("hlo")
    with pytest.raises(_tpusim.InvalidArgumentError, match="has no manual computation over a mesh"):
        client.compile_sharded(plain)
    devices = client_devices() * 2
    too_big = tpusim.jit(jax.shard_map(lambda a: lax.psum(a, "d"), mesh=tpusim.make_mesh((devices,), ("d",)),
                                       in_specs=P("d"), out_specs=P()), config=CONFIG)
    with pytest.raises(_tpusim.InvalidArgumentError, match=f"runs on {devices} devices .*the client has {devices // 2}"):
        too_big(np.zeros((devices, 3), np.float32))
    with pytest.raises(ValueError, match="leading axes differ"):
        tpusim.pmap(lambda a, b: a + b, "i", config=CONFIG)(np.zeros((2, 3), np.float32), np.zeros((3, 3), np.float32))
    mesh = tpusim.make_mesh((2,), ("d",))
    step = tpusim.jit(jax.shard_map(lambda a: a + 1, mesh=mesh, in_specs=P("d"), out_specs=P("d")), config=CONFIG)
    step.profile_next_call = True
    with pytest.raises(NotImplementedError, match="runs on 2 devices"):
        step(np.zeros((4, 3), np.float32))


# --- data-parallel fit ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fashion():
    return data.load_fashion_mnist()


def mlp_model(devices, out=None):
    return tpusim.Model(models.MLP(hidden=(32,)), optax.adam(3e-3), backend="model", config=CONFIG, seed=0,
                        out=out or io.StringIO(), devices=devices)


@pytest.mark.parametrize("devices", DEVICE_COUNTS)
def test_data_parallel_fit_keeps_replicas_identical_and_follows_one_device(fashion, devices):
    (x, y), (x_test, y_test) = fashion
    x, y = x[:32 * 6], y[:32 * 6]
    parallel, single = mlp_model(devices), mlp_model(1)
    for step in range(1, 7):
        parallel.fit(x, y, epochs=1, batch_size=32, stop_after_steps=step, verbose=0)
        replicas = parallel.replica_states()
        assert len(replicas) == devices
        for d in range(1, devices):
            for a, b in zip(jax.tree_util.tree_leaves(replicas[0]), jax.tree_util.tree_leaves(replicas[d])):
                np.testing.assert_array_equal(a, b, err_msg=f"step {step}: device {d}'s state differs from device 0's")
    single.fit(x, y, epochs=1, batch_size=32, verbose=0)
    print(f"\nlosses, 1 device:        {np.round(single.step_losses, 6).tolist()}")
    print(f"losses, {devices} devices (DP): {np.round(parallel.step_losses, 6).tolist()}")
    difference = np.max(np.abs(np.array(parallel.step_losses) - np.array(single.step_losses)))
    print(f"largest difference {difference:.3g}; step cycles: 1 device {single.last_execution_cycles}, "
          f"{devices} devices {parallel.last_execution_cycles}")
    assert difference < 1e-3
    assert parallel.step_losses[-1] < parallel.step_losses[0]
    # The step all-reduces every gradient on the device; each replica saw global_batch / devices examples.
    text = parallel.train_step.last_hlo_text
    assert text.count("all-reduce(") >= len(jax.tree_util.tree_leaves(parallel.state()[0])) + 2
    assert f"f32[{32 // devices},28,28]" in text
    for a, b in zip(jax.tree_util.tree_leaves(parallel.state()), jax.tree_util.tree_leaves(single.state())):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
    # evaluate runs on device 0 with its replica of the parameters.
    loss, accuracy = parallel.evaluate(x_test[:100], y_test[:100], batch_size=50, verbose=0)
    single_loss, single_accuracy = single.evaluate(x_test[:100], y_test[:100], batch_size=50, verbose=0)
    assert loss == pytest.approx(single_loss, rel=1e-3) and accuracy == pytest.approx(single_accuracy, abs=0.02)


def test_data_parallel_fit_refuses_what_it_cannot_do(fashion):
    (x, y), _ = fashion
    with pytest.raises(ValueError, match="batch_size 33 does not split over 2 devices"):
        mlp_model(2).fit(x[:66], y[:66], batch_size=33)
    with pytest.raises(ValueError, match="steps_per_execution must be 1"):
        tpusim.Model(models.MLP(hidden=(32,)), optax.adam(3e-3), config=CONFIG, devices=2, steps_per_execution=4)
    with pytest.raises(ValueError, match=f"devices=64: the {CONFIG} client has {client_devices()} devices"):
        mlp_model(64)


def test_the_trainer_takes_devices():
    from tpusim import train
    args = train.parse_args(["--devices", "2", "--config", CONFIG, "--epochs", "1"])
    model = train.build_model(args, total_steps=10)
    assert model.devices == 2 and model.train_step.name == "train_step"
