"""The JAX bridge against XLA on the CPU (through JAX): single operations, gradients, small models, awkward
sizes; the runtime's errors as Python exceptions; buffers of every element type the device stores; the
project's HLO interpreter on the same modules."""

import os

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import _tpusim
import tpusim

CONFIG = os.environ.get("TPU_CONFIG", "tiny")
# Three bf16 MXU passes (bf16_3x) keep about 16 significant bits of each f32 operand. As in
# docs/numerics.md, the absolute tolerance scales with the output's largest magnitude (sums cancel).
DOT_RTOL, DOT_ATOL = 2e-4, 2e-5


def device_jit(fun, **kwargs):
    return tpusim.jit(fun, backend="model", config=CONFIG, precision="high", **kwargs)


def random(shape, seed, scale=1.0):
    return (np.random.default_rng(seed).uniform(-1, 1, shape) * scale).astype(np.float32)


def assert_matches_cpu(fun, *args, rtol=DOT_RTOL, atol=DOT_ATOL):
    expected = jax.tree_util.tree_map(np.asarray, jax.jit(fun)(*args))
    got = tpusim.device_get(device_jit(fun)(*args))
    for e, g in zip(jax.tree_util.tree_leaves(expected), jax.tree_util.tree_leaves(got)):
        assert g.shape == e.shape and g.dtype == e.dtype
        finite = np.abs(e[np.isfinite(e)]) if e.dtype.kind == "f" or e.dtype == ml_dtypes.bfloat16 else np.abs(e)
        scale = max(float(np.max(finite, initial=0)), 1.0)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol * scale)


ELEMENTWISE = {
    "add": lambda a, b: a + b,
    "multiply": lambda a, b: a * b,
    "maximum": jnp.maximum,
    "divide": lambda a, b: a / (jnp.abs(b) + 1),
    "exp_log": lambda a, b: jnp.log(jnp.exp(a) + jnp.exp(b)),
    "relu_select": lambda a, b: jnp.where(a > b, jax.nn.relu(a), b),
    "rsqrt": lambda a, b: jax.lax.rsqrt(a * a + 1) * b,
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
@pytest.mark.parametrize("shape", [(5, 13), (3, 8), (17,)])
def test_elementwise_matches_cpu(name, shape):
    # exp, log and rsqrt are within a few ulp (docs/numerics.md), the rest exact.
    assert_matches_cpu(ELEMENTWISE[name], random(shape, 1, 2), random(shape, 2, 2), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("m,k,n", [(5, 13, 7), (8, 8, 8), (33, 20, 3), (1, 9, 130)])
def test_dot_and_its_gradients_match_cpu(m, k, n):
    a, b = random((m, k), 3), random((k, n), 4)
    assert_matches_cpu(lambda a, b: a @ b, a, b)
    assert_matches_cpu(jax.grad(lambda a, b: jnp.sum((a @ b) ** 2), argnums=(0, 1)), a, b)


def test_matmul_precision_chooses_the_mxu_passes_as_on_a_tpu():
    # DEFAULT: one bf16 pass; HIGH: three (bf16_3x, about 16 bits); HIGHEST: six (bf16_6x, about f32's 24).
    a, b = random((64, 96), 6), random((96, 32), 7)
    expected = np.asarray(jax.jit(lambda a, b: a @ b)(a, b))
    scale = float(np.max(np.abs(expected)))
    macs, error = {}, {}
    for precision in ("default", "high", "highest"):
        f = tpusim.jit(lambda a, b: a @ b, backend="model", config=CONFIG, precision=precision)
        got = tpusim.device_get(f(a, b))
        macs[precision] = f.compile(a, b).executable.logical_macs
        error[precision] = float(np.max(np.abs(got - expected))) / scale
    assert macs["high"] == 3 * macs["default"] and macs["highest"] == 6 * macs["default"]
    assert 1e-4 < error["default"] < 2e-2  # bf16 operands: a few 2^-9 relative
    assert error["high"] < 2e-5 < 1e-4 < error["default"]
    assert error["highest"] < 5e-7 and error["highest"] < error["high"]


def test_reductions_and_softmax_match_cpu():
    x = random((6, 11), 5, 3)
    assert_matches_cpu(lambda x: (jnp.sum(x, 0), jnp.max(x, 1), jnp.mean(x)), x, rtol=1e-5, atol=1e-6)
    assert_matches_cpu(lambda x: jax.nn.log_softmax(x), x, rtol=1e-5, atol=1e-5)


def test_small_mlp_loss_and_gradients_match_cpu():
    import flax.linen as nn

    class Tiny(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(3)(nn.relu(nn.Dense(12)(x)))

    x, labels = random((10, 7), 6), np.arange(10, dtype=np.int32) % 3
    params = Tiny().init(jax.random.PRNGKey(0), x)

    def loss(p, x, labels):
        losses, _ = tpusim.training.sparse_categorical_crossentropy(Tiny().apply(p, x), labels)
        return jnp.mean(losses)

    assert_matches_cpu(jax.value_and_grad(loss), params, x, labels)


def test_results_stay_on_device_and_feed_the_next_call():
    double = device_jit(lambda x: x * 2)
    y = double(np.ones((4, 3), np.float32))
    assert isinstance(y, tpusim.Array) and y.shape == (4, 3) and y.dtype == np.float32
    z = double(y)
    np.testing.assert_array_equal(np.asarray(z), np.full((4, 3), 4, np.float32))
    assert len(double._compiled) == 1  # same signature: compiled once


def test_donated_arguments_alias_outputs():
    step = device_jit(lambda w, g: (w - 0.5 * g, jnp.sum(g)), donate_argnums=(0,))
    assert "input_output_alias" in step.lower(np.ones(8, np.float32), np.ones(8, np.float32))[0]
    w = tpusim.device_put(np.ones(8, np.float32), step.client)
    new_w, total = step(w, np.ones(8, np.float32))
    assert w.is_deleted() and not new_w.is_deleted()
    np.testing.assert_array_equal(np.asarray(new_w), np.full(8, 0.5, np.float32))
    assert float(total) == 8.0
    with pytest.raises(tpusim.FailedPreconditionError, match="donated"):
        np.asarray(w)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.float16, np.int32, np.uint32, np.bool_])
def test_buffers_round_trip_every_device_element_type(dtype):
    client = tpusim.get_client("model", CONFIG)
    value = (np.random.default_rng(7).uniform(-100, 100, (3, 19)) > 0 if dtype == np.bool_
             else np.random.default_rng(7).uniform(0, 100, (3, 19)).astype(dtype))
    buffer = client.buffer_from_numpy(value)
    back = buffer.to_numpy()
    assert back.dtype == value.dtype and back.shape == value.shape
    np.testing.assert_array_equal(back, value)


def test_bf16_arithmetic_in_a_dot_matches_cpu():
    a = random((4, 16), 8).astype(ml_dtypes.bfloat16)
    b = random((16, 5), 9).astype(ml_dtypes.bfloat16)
    # bf16 x bf16 products are exact in f32; with f32 accumulation the sums match up to rounding order.
    f = lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32)
    assert_matches_cpu(f, a, b, rtol=1e-5, atol=1e-6)


def test_unsupported_operation_stops_compilation_with_the_tpu_message():
    with pytest.raises(tpusim.NotFoundError,
                       match=r"No registered '\w+' OpKernel for XLA_TPU_JIT devices compatible with node"):
        device_jit(lambda x: jax.lax.linalg.cholesky(x @ x.T + 4 * jnp.eye(4, dtype=x.dtype)))(np.ones((4, 4), np.float32))


def test_runtime_errors_are_python_exceptions_with_the_runtime_message():
    client = tpusim.get_client("model", CONFIG)
    too_big = client.hbm_limit_bytes // 4 + 1024
    with pytest.raises(tpusim.ResourceExhaustedError, match=r"^Ran out of memory in memory space hbm; used: "):
        client.buffer_from_numpy(np.zeros(too_big, np.float32))
    exe = client.compile(device_jit(lambda x: x + 1).lower(np.ones(4, np.float32))[0])
    with pytest.raises(tpusim.InvalidArgumentError, match="f32\\[5\\]"):
        exe.execute([client.buffer_from_numpy(np.ones(5, np.float32))])
    with pytest.raises(tpusim.TpuError):
        client.compile("HloModule broken\nENTRY e { p = f32[4] parameter(0)\n ROOT r = f32[4] bogus(p) }")
    # The client is still usable after each error.
    np.testing.assert_array_equal(np.asarray(device_jit(lambda x: x + 1)(np.ones(4, np.float32))),
                                  np.full(4, 2, np.float32))


def test_interpreter_matches_cpu_on_the_same_modules():
    a, b = random((6, 10), 10), random((10, 4), 11)
    fun = jax.value_and_grad(lambda a, b: jnp.sum(jax.nn.relu(a @ b) * jnp.exp(-(a @ b) ** 2)), argnums=(0, 1))
    hlo_text, _ = device_jit(fun).lower(a, b)
    expected = jax.tree_util.tree_leaves(jax.tree_util.tree_map(np.asarray, jax.jit(fun)(a, b)))
    got = _tpusim.interpret(hlo_text, [a, b])
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_interpreter_matches_cpu_on_a_training_step():
    import optax
    from tpusim import models, training

    module, optimizer = models.MLP(hidden=(24,)), optax.adam(1e-2)
    x = random((16, 28, 28), 12) * 0.5 + 0.5
    labels = (np.arange(16) * 7 % 10).astype(np.int32)
    params = module.init(jax.random.PRNGKey(1), x)
    state = jax.device_get((params, optimizer.init(params)))
    step = training.make_train_step(module, optimizer)
    hlo_text, _ = device_jit(step).lower(*state, x, labels)
    expected = [np.asarray(v) for v in jax.tree_util.tree_leaves(jax.jit(step)(*state, x, labels))]
    got = _tpusim.interpret(hlo_text, [np.asarray(v) for v in jax.tree_util.tree_leaves(state)] + [x, labels])
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-6 * max(1.0, float(np.max(np.abs(e)))))


def batch_loop(data, w):
    """A fori_loop over the rows of `data` (dynamic-slice by the loop index), a lax.cond on the device's
    running sum, and a dynamic-update-slice of each step's row into a history."""
    def step(i, carry):
        acc, history = carry
        row = jax.lax.dynamic_slice(data, (i * 2, 0), (2, data.shape[1]))
        h = jnp.tanh(row @ w)
        acc = jax.lax.cond(jnp.sum(acc) > 0.0, lambda a: a * 0.5 + h, lambda a: a - h, acc)
        history = jax.lax.dynamic_update_slice(history, acc, (i * 2, 0))
        return acc, history
    acc0 = jnp.zeros((2, w.shape[1]), jnp.float32)
    return jax.lax.fori_loop(0, data.shape[0] // 2, step, (acc0, jnp.zeros((data.shape[0], w.shape[1]), jnp.float32)))


def switch_and_clamped_slices(index, x):
    """lax.switch with an index the caller passes (out of range clamps to the last branch) and slices at
    the same index, out of range too (clamped into the array)."""
    y = jax.lax.switch(index, [lambda v: v + 1.0, lambda v: v * 3.0, lambda v: -v], x)
    window = jax.lax.dynamic_slice(x, (index, 0), (3, x.shape[1]))
    return y, window, jax.lax.dynamic_update_slice(x, window * 2.0, (index - 1, 0))


@pytest.mark.parametrize("index", [-4, 0, 1, 2, 9])
def test_switch_and_dynamic_slices_match_cpu_on_device_and_interpreter(index):
    x = random((8, 12), 20)
    i = np.int32(index)
    assert_matches_cpu(switch_and_clamped_slices, i, x, rtol=0, atol=0)
    hlo_text, _ = device_jit(switch_and_clamped_slices).lower(i, x)
    expected = jax.tree_util.tree_leaves(jax.tree_util.tree_map(np.asarray, jax.jit(switch_and_clamped_slices)(i, x)))
    got = _tpusim.interpret(hlo_text, [np.asarray(i), x])
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g, e)


def test_loops_with_dynamic_rows_and_a_cond_match_cpu():
    data, w = random((10, 16), 21), random((16, 8), 22)
    assert_matches_cpu(batch_loop, data, w)


def test_random_numbers_match_cpu_bit_for_bit():
    """jax.random's threefry (u32 adds, xors, shifts and rotations in a loop) and the float conversion
    (shift, or, bitcast-convert) run on the device: the same bits as XLA on the CPU."""
    def sample(key, x):
        k1, k2 = jax.random.split(key)
        keep = jax.random.bernoulli(k1, 0.7, x.shape)
        return jnp.where(keep, x / 0.7, 0.0), jax.random.uniform(k2, x.shape, minval=-1.0, maxval=1.0)
    key = jax.random.PRNGKey(7)
    assert_matches_cpu(sample, key, random((8, 20), 30), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_shifts_and_bitwise_ops_match_cpu(dtype):
    """Shift amounts from 0 to 39 (32 and more shift everything out, or fill with the sign)."""
    rng = np.random.default_rng(31)
    x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (6, 40), dtype=dtype, endpoint=True)
    amount = np.tile(np.arange(40, dtype=dtype), (6, 1))
    fun = lambda x, s: (jax.lax.shift_left(x, s), jax.lax.shift_right_logical(x, s),
                        jax.lax.shift_right_arithmetic(x, s), (x & s) | ~(x ^ s))
    assert_matches_cpu(fun, x, amount, rtol=0, atol=0)
    hlo_text, _ = device_jit(fun).lower(x, amount)
    for e, g in zip(jax.tree_util.tree_leaves(jax.jit(fun)(x, amount)), _tpusim.interpret(hlo_text, [x, amount])):
        np.testing.assert_array_equal(g, np.asarray(e))


def test_attention_with_batched_dots_matches_cpu():
    """Scaled dot-product attention over 2 heads: batched query-key and weight-value dots, a softmax."""
    def attention(q, k, v):
        scores = jnp.einsum("hqd,hkd->hqk", q, k) / np.sqrt(q.shape[-1]).astype(np.float32)
        return jnp.einsum("hqk,hkd->hqd", jax.nn.softmax(scores, axis=-1), v)
    q, k, v = random((2, 5, 8), 40), random((2, 7, 8), 41), random((2, 7, 8), 42)
    assert_matches_cpu(attention, q, k, v)
    # The gradient's twelve matrix dots need v2's IMEM for three MXU passes each (tiny falls back to one).
    grad = jax.grad(lambda q, k, v: jnp.sum(attention(q, k, v) ** 2), argnums=(0, 1, 2))
    expected = jax.jit(grad)(q, k, v)
    got = tpusim.device_get(tpusim.jit(grad, backend="model", config="v2", precision="high")(q, k, v))
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, np.asarray(e), rtol=DOT_RTOL, atol=DOT_ATOL * float(np.max(np.abs(e))))


def test_bf16_arithmetic_matches_cpu():
    """bf16 values through elementwise arithmetic, a compare and a dot: each operation in f32 rounded back
    to bf16, as XLA on the CPU computes them."""
    def layer(x, w, b):
        x, w, b = x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), b.astype(jnp.bfloat16)
        h = x @ w + b
        return jnp.where(h > 0, h * jnp.bfloat16(1.5), -h), jnp.maximum(x * x - jnp.bfloat16(0.25), x)
    x, w, b = random((8, 16), 50), random((16, 24), 51), random((24,), 52)
    expected = jax.jit(layer)(x, w, b)
    got = tpusim.device_get(device_jit(layer)(x, w, b))
    for e, g in zip(expected, got):
        assert g.dtype == e.dtype == jnp.bfloat16
        np.testing.assert_array_equal(np.asarray(g, np.float32), np.asarray(e, np.float32))


def test_embedding_lookup_and_its_gradient_match_cpu():
    """An embedding table read at token ids (a row gather) and its gradient (a scatter-add of rows, repeated
    ids accumulating)."""
    table = random((50, 16), 60)
    tokens = (np.arange(32, dtype=np.int32).reshape(4, 8) * 7) % 50
    tokens[1, 3] = tokens[0, 0]  # a repeated id
    loss = lambda table, tokens: jnp.sum(jnp.tanh(table[tokens]) ** 2)
    assert_matches_cpu(lambda t, ids: t[ids], table, tokens, rtol=0, atol=0)
    assert_matches_cpu(jax.grad(loss), table, tokens)


def test_integer_label_cross_entropy_and_its_gradient_match_cpu():
    """optax's cross-entropy with integer labels: take_along_axis (a gather with batching dimensions), its
    gradient (a scatter-add), and the label range check (is-finite, and-reductions)."""
    import optax
    logits = random((4, 8, 50), 70, scale=2.0)
    labels = ((np.arange(32) * 7) % 50).astype(np.int32).reshape(4, 8)
    loss = lambda logits, labels: optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    assert_matches_cpu(jax.value_and_grad(loss), logits, labels)


def test_argmax_and_argmin_match_cpu():
    """jnp.argmax / jnp.argmin along each axis: first position on ties, NaN first, as XLA on the CPU."""
    x = random((5, 7, 9), 80)
    x[1, 2, 3] = np.nan
    x[2, :, 4] = 0.5  # ties
    fun = lambda x: (jnp.argmax(x, axis=-1), jnp.argmin(x, axis=0), jnp.argmax(x, axis=1))
    assert_matches_cpu(fun, x, rtol=0, atol=0)


def test_rnn_scan_and_backpropagation_through_time_match_cpu():
    """A tanh RNN in lax.scan and its gradient: while loops on the device that slice one time step of the
    inputs (dynamic-slice) and write one of the outputs (dynamic-update-slice) per iteration."""
    def rnn(wx, wh, xs):
        def cell(h, x):
            h = jnp.tanh(x @ wx + h @ wh)
            return h, h.sum(axis=-1)
        h, ys = jax.lax.scan(cell, jnp.zeros((xs.shape[1], wh.shape[0]), jnp.float32), xs)
        return jnp.mean(h ** 2) + jnp.mean(ys)
    wx, wh, xs = random((8, 16), 90, 0.5), random((16, 16), 91, 0.5), random((6, 4, 8), 92)
    assert_matches_cpu(jax.value_and_grad(rnn, argnums=(0, 1)), wx, wh, xs)


def test_cumulative_sums_and_pooling_along_the_last_axis_match_cpu():
    """Windows on the minor dimension: jnp.cumsum along the last axis and max pooling over it."""
    x = random((6, 11), 95)
    fun = lambda x: (jnp.cumsum(x, axis=-1),
                     jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3), (1, 2), "VALID"))
    assert_matches_cpu(fun, x)


def test_expm1_log1p_and_a_sigmoid_cross_entropy_match_cpu():
    """expm1 and log1p near 0 (where exp(x) - 1 and log(1 + x) cancel) and far from it, and optax's sigmoid
    binary cross-entropy (log-sigmoid through softplus, a log1p of an exp)."""
    import optax
    x = np.concatenate([random((40,), 100, 1e-3), random((40,), 101, 3.0)]).reshape(8, 10)
    assert_matches_cpu(lambda x: (jnp.expm1(x), jnp.log1p(jnp.abs(x))), x, rtol=1e-6, atol=0)
    logits, labels = random((8, 10), 102, 4.0), (random((8, 10), 103) > 0).astype(np.float32)
    loss = lambda logits: optax.sigmoid_binary_cross_entropy(logits, labels).mean()
    assert_matches_cpu(jax.value_and_grad(loss), logits)


def test_uint8_images_and_narrow_integer_arithmetic_match_cpu():
    """uint8 images scaled on the device (the usual input pipeline), int8 / int16 / uint16 arithmetic that
    wraps at its width, saturating float -> int8 and wrapping int32 -> int8 converts, as XLA on the CPU."""
    images = ((np.arange(4 * 28 * 28) * 37) % 256).astype(np.uint8).reshape(4, 28, 28)
    w = random((28 * 28, 10), 90)
    assert_matches_cpu(lambda x, w: (x.reshape(4, -1).astype(jnp.float32) / 255.0) @ w, images, w)
    a = ((np.arange(64) * 53) % 256 - 128).astype(np.int8).reshape(8, 8)
    b = ((np.arange(64) * 29) % 256 - 128).astype(np.int8).reshape(8, 8)
    h = ((np.arange(64) * 4099) % 65536).astype(np.uint16).reshape(8, 8)
    big = (np.arange(64, dtype=np.int32).reshape(8, 8) - 32) * 977
    f = random((8, 8), 91, scale=300.0)

    def narrow(a, b, h, big, f):
        return (a + b, a * b, -a, jnp.maximum(a, b), a.astype(jnp.int16) * 300, h * h, h >> 3, a < b,
                big.astype(jnp.int8), f.astype(jnp.int8), (a ^ b).astype(jnp.float32))
    assert_matches_cpu(narrow, a, b, h, big, f, rtol=0, atol=0)


def test_remainder_and_floor_mod_match_cpu():
    """jnp.fmod (XLA's remainder: the dividend's sign) and jnp.remainder / % (Python's floor modulo, a
    remainder and a correction) on f32, with signed zeros, infinities, NaN and division by zero, bit for
    bit as XLA on the CPU while |x / y| < 2^24."""
    x = np.array([5.5, -5.5, 0.0, -0.0, np.inf, np.nan, 3.0, -7.25, 1e6 + 0.5, 0.1, -1.0, 2.0], np.float32)
    y = np.array([2.0, 2.0, 1.0, -1.0, 2.0, 2.0, np.inf, 0.0, 3.0, 0.03, 0.3, -np.inf], np.float32)
    xs, ys = random((6, 40), 95, scale=100.0), random((6, 40), 96, scale=3.0)
    ys[np.abs(ys) < 0.01] = 0.5
    for fun in (jnp.fmod, jnp.remainder, lambda a, b: a % b):
        for a, b in ((x, y), (xs, ys)):
            expected = np.asarray(jax.jit(fun)(a, b))
            got = np.asarray(tpusim.device_get(device_jit(fun)(a, b)))
            np.testing.assert_array_equal(got, expected)
            numbers = ~np.isnan(expected)  # a NaN's sign bit is the host's business
            np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(expected)[numbers])


def test_atan2_matches_cpu():
    """jnp.arctan2 in every quadrant and at XLA's special cases (signed zeros, infinities, NaN) within a
    few ulp of XLA on the CPU, and exactly where the CPU's answer is exact (0, +-pi, +-pi/4)."""
    y = np.array([0.0, -0.0, 0.0, -0.0, np.inf, -np.inf, np.inf, 1.0, -1.0, np.nan, 3.0, -2.0], np.float32)
    x = np.array([0.0, 0.0, -0.0, -0.0, np.inf, np.inf, -np.inf, -np.inf, 0.0, 1.0, -4.0, -1e-3], np.float32)
    expected = np.asarray(jax.jit(jnp.arctan2)(y, x))
    got = np.asarray(tpusim.device_get(device_jit(jnp.arctan2)(y, x)))
    np.testing.assert_allclose(got, expected, rtol=4e-7, atol=0)
    numbers = ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(got)[numbers], np.signbit(expected)[numbers])
    ys, xs = random((8, 50), 97, scale=10.0), random((8, 50), 98, scale=10.0)
    assert_matches_cpu(jnp.arctan2, ys, xs, rtol=4e-7, atol=0)



def _device_and_cpu(fun, *args):
    expected = np.asarray(jax.jit(fun)(*args))
    got = np.asarray(tpusim.device_get(device_jit(fun)(*args)))
    assert got.dtype == expected.dtype and got.shape == expected.shape
    return got, expected


def _assert_close_and_same_specials(got, expected, rtol, atol):
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)  # NaN where XLA has NaN, equal infinities
    numbers = ~np.isnan(expected)
    zeros = numbers & (expected == 0)
    np.testing.assert_array_equal(np.signbit(got)[zeros], np.signbit(expected)[zeros])


TRIG_SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-20, 3.1415927, -1.5707964], np.float32)


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_sin_cos_tan_match_cpu(name):
    """jnp.sin, cos and tan over several periods, at large arguments inside the reduced range (|x| <=
    102943), next to multiples of pi/2 and at the special values (signed zeros, infinities and NaN give
    XLA's answers) within a few ulp of XLA on the CPU (elementwise-expansion)."""
    fun = getattr(jnp, name)
    periods = np.linspace(-20.0, 20.0, 8 * 125, dtype=np.float32).reshape(8, 125)
    large = random((4, 64), 31, scale=1e5)
    near_multiples = (np.arange(1, 257, dtype=np.float64) * np.pi / 2).astype(np.float32)
    # Where XLA's own result is itself rounded, allow a few ulp; near the zeros of sin and cos (and the
    # poles of tan) the absolute error of the reduction is what counts.
    rtol = 6e-7 if name == "tan" else 3e-7
    for x in (periods, large, near_multiples, TRIG_SPECIALS):
        got, expected = _device_and_cpu(fun, x)
        atol = 1e-7 * np.maximum(1.0, np.abs(x)) * (1 + expected.astype(np.float64) ** 2 if name == "tan" else 1)
        bad = ~(np.isclose(got, expected, rtol=rtol, atol=0) | (np.abs(got.astype(np.float64) - expected) <= atol))
        bad &= ~(np.isnan(got) & np.isnan(expected))
        assert not bad.any(), (name, x[bad][:5], got[bad][:5], expected[bad][:5])
    _assert_close_and_same_specials(*_device_and_cpu(fun, TRIG_SPECIALS[:5]), rtol=0, atol=0)


def test_trig_bf16_and_f16_match_cpu():
    """bf16 and f16 sine and cosine run in f32 and round once (bf16- and f16-normalization)."""
    x = np.linspace(-10.0, 10.0, 96, dtype=np.float32).reshape(8, 12)
    for dtype in (jnp.bfloat16, jnp.float16):
        got, expected = _device_and_cpu(lambda a: (jnp.sin(a) * jnp.cos(a)), x.astype(dtype))
        np.testing.assert_allclose(got.astype(np.float32), expected.astype(np.float32), rtol=1e-2, atol=1e-2)


def test_erf_and_exact_gelu_match_cpu():
    """jax.scipy.special.erf (XLA's rational form; the divide is VRCP and a product here) with its
    saturation and special values, and jax.nn.gelu(approximate=False) (JAX writes erfc out) with its
    gradient."""
    x = np.concatenate([np.linspace(-5.0, 5.0, 1000, dtype=np.float32),
                        np.array([3.8325069, -3.8325069, 3.8325067, 1e-20, 0.0, -0.0, np.inf, -np.inf, np.nan],
                                 np.float32)])
    _assert_close_and_same_specials(*_device_and_cpu(jax.scipy.special.erf, x), rtol=4e-7, atol=1e-7)
    a = random((8, 100), 41, scale=6.0)
    gelu = lambda v: jax.nn.gelu(v, approximate=False)
    assert_matches_cpu(gelu, a, rtol=2e-6, atol=1e-6)
    assert_matches_cpu(jax.grad(lambda v: gelu(v).sum()), a, rtol=2e-6, atol=1e-6)


def test_cbrt_matches_cpu():
    """jnp.cbrt over the whole exponent range, negative values, signed zeros, infinities and NaN."""
    rng = np.random.default_rng(5)
    x = (rng.choice([-1.0, 1.0], 512) * np.exp2(rng.uniform(-125, 127, 512))).astype(np.float32)
    x = np.concatenate([x, np.array([27.0, -8.0, 1.0, 0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)])
    _assert_close_and_same_specials(*_device_and_cpu(jnp.cbrt, x), rtol=4e-7, atol=0)


def test_clz_and_population_count_match_cpu():
    """lax.clz and lax.population_count of int32, uint32 and the narrow integer types, bit for bit."""
    rng = np.random.default_rng(9)
    words = rng.integers(0, 2**32, 200, dtype=np.uint64) >> rng.integers(0, 33, 200, dtype=np.uint64)
    u = np.concatenate([words.astype(np.uint32), np.array([0, 1, 2**31, 2**32 - 1], np.uint32)])
    for x in (u, u.view(np.int32), u.astype(np.uint8), u.astype(np.int8), u.astype(np.int16), u.astype(np.uint16)):
        assert_matches_cpu(lambda a: (jax.lax.clz(a), jax.lax.population_count(a)), x, rtol=0, atol=0)


def test_erfinv_and_normal_samples_match_cpu():
    """jax.scipy.special.erfinv and jax.random.normal: JAX writes erf_inv out as log-plus-one, sqrt and
    polynomials, which the device lowers."""
    p = np.linspace(-0.999, 0.999, 400, dtype=np.float32)
    assert_matches_cpu(jax.scipy.special.erfinv, p, rtol=1e-5, atol=1e-6)
    key = jax.random.key_data(jax.random.PRNGKey(3))
    sample = lambda k: jax.random.normal(jax.random.wrap_key_data(k), (16, 40))
    assert_matches_cpu(sample, key, rtol=1e-5, atol=1e-5)

def test_integer_division_and_modulo_match_cpu():
    """int32 and uint32 // and % (XLA's truncating divide and remainder, and JAX's floor corrections), by
    zero, MIN // -1 and the extremes, bit for bit as XLA on the CPU."""
    x = np.array([7, -7, 7, -7, 0, 5, -2147483648, -2147483648, 2147483647, 123456789, -99, 1], np.int32)
    y = np.array([2, 2, -2, -2, 3, 0, -1, 7, -2147483648, 1000, 10, 2147483647], np.int32)
    for fun in (lambda a, b: a // b, lambda a, b: a % b, lambda a, b: jax.lax.div(a, b),
                lambda a, b: jax.lax.rem(a, b)):
        assert_matches_cpu(fun, x, y, rtol=0, atol=0)
    u = x.view(np.uint32)
    v = np.array([2, 2, 3, 3, 3, 0, 1, 7, 5, 1000, 10, 4000000000], np.uint32)
    assert_matches_cpu(lambda a, b: (jax.lax.div(a, b), jax.lax.rem(a, b)), u, v, rtol=0, atol=0)
    i = (np.arange(40, dtype=np.int32) * 7919 - 150000).reshape(5, 8)
    assert_matches_cpu(lambda a: (a // 7, a % 7, jax.lax.rem(a, -3)), i, rtol=0, atol=0)


def test_sort_matches_cpu():
    """jnp.sort (NaN last, -0 before +0 as XLA's total order), jnp.argsort (stable), descending and
    multi-key lax.sort along every axis, bit for bit as XLA on the CPU (sort-expansion)."""
    rng = np.random.default_rng(7)
    x = rng.integers(-3, 4, size=(6, 13)).astype(np.float32)
    x[0, :5] = [np.nan, -0.0, 0.0, np.inf, -np.inf]
    x[3, 7:] = [0.0, -0.0, np.nan, -np.nan, 2.5, -np.inf]
    for axis in (0, 1):
        assert_matches_cpu(lambda a: jnp.sort(a, axis=axis), x, rtol=0, atol=0)
        assert_matches_cpu(lambda a: jnp.argsort(a, axis=axis), x, rtol=0, atol=0)
        assert_matches_cpu(lambda a: jnp.sort(a.astype(jnp.bfloat16), axis=axis), x, rtol=0, atol=0)
    signs = np.signbit(np.asarray(tpusim.device_get(device_jit(jnp.sort)(x))))
    np.testing.assert_array_equal(signs, np.signbit(np.asarray(jax.jit(jnp.sort)(x))))
    y = rng.integers(-1000, 1000, size=(3, 4, 9)).astype(np.int32)
    for axis in (0, 1, 2):
        assert_matches_cpu(lambda a: -jnp.sort(-a, axis=axis), y, rtol=0, atol=0)
    keys = rng.integers(0, 3, size=(21,)).astype(np.int32)
    values = rng.standard_normal(21).astype(np.float32)
    assert_matches_cpu(lambda k, v: jax.lax.sort((k, v, jnp.arange(21)), num_keys=2), keys, values, rtol=0, atol=0)


F16_SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, -65504.0, 2.0 ** -24, -(2.0 ** -24),
                         1023 * 2.0 ** -24, 2.0 ** -14, 1.0 + 2.0 ** -10, 3.0, -0.5], np.float16)


def assert_same_f16(got, expected, zero_signs=True):
    """Bit for bit up to the NaN payload (a NaN's sign is the host's business too); with zero_signs=False
    -0 and +0 are the same value."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    nan = np.isnan(expected.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
    if not zero_signs:
        got, expected = got + np.float16(0), expected + np.float16(0)  # -0 + 0 = +0
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], expected.view(np.uint16)[~nan])


def test_f16_buffers_keep_every_bit_pattern():
    client = tpusim.get_client("model", CONFIG)
    value = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).reshape(256, 256)
    assert_same_f16(client.buffer_from_numpy(value).to_numpy(), value)


def test_f16_arithmetic_and_converts_match_cpu_bit_for_bit():
    """f16 + - * / max min, compares, selects and converts (f32, bf16, int32 both ways) with signed zeros,
    infinities, NaN, f16 subnormals, overflow and rounding ties: each operation on the f32 values rounded
    back to f16 (XLA on the CPU computes f16 the same way), bit for bit."""
    rng = np.random.default_rng(120)
    a = np.concatenate([F16_SPECIALS, rng.uniform(-300, 300, 50).astype(np.float16)])
    b = np.concatenate([F16_SPECIALS[::-1], rng.uniform(-4, 4, 50).astype(np.float16)])
    wide = np.concatenate([
        np.array([65519.99, 65520.0, 70000.0, -1e-8, 2.0 ** -25, 3 * 2.0 ** -25, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11,
                  np.nan, -np.inf, 1e-40, 5.9604645e-08], np.float32),
        (rng.uniform(-1, 1, 52) * np.exp2(rng.integers(-26, 17, 52))).astype(np.float32)])
    ints = np.array([0, 1, -1, 2049, 65504, 65519, 65520, -70000, 2 ** 31 - 1, -(2 ** 31)] + list(range(-27, 27)),
                    np.int32)

    def arithmetic(a, b):
        return (a + b, a - b, a * b, a / b, jnp.maximum(a, b), jnp.minimum(a, b), a < b, a == b,
                jnp.where(a >= b, a, b), jnp.abs(a), a * jnp.float16(2.0 ** -20), a * jnp.float16(1024))

    def converts(a, wide, ints):
        return (a.astype(jnp.float32), wide.astype(jnp.float16), a.astype(jnp.bfloat16),
                wide.astype(jnp.bfloat16).astype(jnp.float16), ints.astype(jnp.float16), a.astype(jnp.int32))

    for fun, args in ((arithmetic, (a, b)), (converts, (a, wide, ints))):
        expected = jax.jit(fun)(*args)
        got = tpusim.device_get(device_jit(fun)(*args))
        for e, g in zip(expected, got):
            e, g = np.asarray(e), np.asarray(g)
            if e.dtype == np.float16:
                assert_same_f16(g, e)
            else:
                assert g.dtype == e.dtype
                wide = np.float32 if e.dtype == ml_dtypes.bfloat16 else e.dtype  # NaN == NaN as float32
                np.testing.assert_array_equal(g.astype(wide), e.astype(wide))
    # A negate on the device keeps the padded lanes +0, so -(+0) is +0 there (as for f32).
    assert_same_f16(tpusim.device_get(device_jit(lambda a: -a)(a)), jax.jit(lambda a: -a)(a), zero_signs=False)


def test_f16_matmul_and_a_mixed_precision_layer_match_cpu():
    """An f16 matmul (f32 dots with six MXU passes: the products of f16 values are exact), an f16 sum and a
    mixed-precision layer (f16 weights and activations, f32 accumulation and loss): within rounding of the
    order of the f32 sums, rounded to f16 once."""
    x = random((8, 24), 121).astype(np.float16)
    w = random((24, 16), 122).astype(np.float16)
    expected = np.asarray(jax.jit(jnp.matmul)(x, w), np.float32)
    got = np.asarray(tpusim.device_get(device_jit(jnp.matmul)(x, w)))
    assert got.dtype == np.float16
    # One f16 rounding apart at most (the f32 sums may round to either neighbour).
    np.testing.assert_allclose(got.astype(np.float32), expected, rtol=2 ** -10, atol=2 ** -14)

    def layer(x, w, b, labels):
        h = jax.nn.relu(jnp.dot(x, w, preferred_element_type=jnp.float32) + b)
        logits = h.astype(jnp.float16) * jnp.float16(0.5)
        loss = jnp.mean((logits.astype(jnp.float32) - labels) ** 2)
        return logits, loss, jnp.sum(logits, axis=1)
    b, labels = random((16,), 123), random((8, 16), 124)
    expected = jax.jit(layer)(x, w, b, labels)
    got = tpusim.device_get(device_jit(layer)(x, w, b, labels))
    for e, g in zip(expected, got):
        e, g = np.asarray(e), np.asarray(g)
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g.astype(np.float32), e.astype(np.float32), rtol=2 ** -9, atol=2 ** -12)


def dyadic(shape, seed):
    """Values in eighths: sums of a few of them are exact in any order."""
    return np.round(random(shape, seed, 8.0)).astype(np.float32) / 8


# Indices from below 0 to past the end, repeated: jnp wraps negative ones, clamps a read past the end and
# drops an update there, as XLA on the CPU.
IDX = np.array([3, -1, 0, 3, 12, 5], np.int32)
PAIRS = (np.array([1, 5, 0, 1, -2, 9], np.int32), np.array([4, 0, 2, 4, 1, 3], np.int32))

GATHERS = {
    "x[idx] on 1-D": (lambda x, i: x[i], lambda: (dyadic((10,), 1), IDX)),
    "x[idx] with a 2-D idx": (lambda x, i: x[i], lambda: (dyadic((10,), 2), IDX.reshape(2, 3))),
    "x[:, idx]": (lambda x, i: x[:, i], lambda: (dyadic((6, 9), 3), IDX)),
    "jnp.take axis 1": (lambda x, i: jnp.take(x, i, axis=1), lambda: (dyadic((6, 9), 4), IDX)),
    "x[idx] on rank 3": (lambda x, i: x[i], lambda: (dyadic((8, 3, 5), 5), IDX)),
    "x[:, idx] on rank 3": (lambda x, i: x[:, i], lambda: (dyadic((4, 8, 5), 6), IDX)),
    "x[i, j]": (lambda x, i, j: x[i, j], lambda: (dyadic((6, 5), 7), *PAIRS)),
    "take_along_axis 0": (lambda x, i: jnp.take_along_axis(x, i, axis=0),
                          lambda: (dyadic((6, 5), 8), np.array([[0, 5, 2, 1, 3], [4, 4, 0, 5, 1]], np.int32))),
    "take_along_axis 1": (lambda x, i: jnp.take_along_axis(x, i, axis=1),
                          lambda: (dyadic((6, 5), 9), np.arange(12, dtype=np.int32).reshape(6, 2) % 5)),
}


@pytest.mark.parametrize("name", sorted(GATHERS))
def test_gather_forms_and_their_gradients_match_cpu(name):
    """Gathers as jnp indexing writes them (row-gathers: slab gathers of transposed or reshaped operands),
    and their gradients (scatter-adds of the same forms), exactly."""
    fun, make = GATHERS[name]
    args = make()
    assert_matches_cpu(fun, *args, rtol=0, atol=0)
    loss = lambda x, *i: jnp.sum(fun(x, *i) ** 2)
    assert_matches_cpu(jax.grad(loss), *args, rtol=0, atol=0)


SCATTERS = {
    "x.at[idx].set on 1-D": lambda x, u: x.at[IDX].set(u),
    "x.at[idx].add on 1-D": lambda x, u: x.at[IDX].add(u),
    "x.at[idx].mul on 1-D": lambda x, u: x.at[IDX].multiply(u),
    "x.at[idx].min on 1-D": lambda x, u: x.at[IDX].min(u),
    "x.at[idx].max on 1-D": lambda x, u: x.at[IDX].max(u),
    "x.at[idx].max on rows": lambda x, u: x.reshape(10, 1).repeat(3, axis=1).at[IDX].max(u[:, None] * 2),
    "x.at[idx].mul on rows": lambda x, u: x.reshape(5, 2).at[IDX % 5].multiply(jnp.stack([u, u], axis=1)),
    "x.at[:, idx].add": lambda x, u: x.reshape(2, 5).at[:, IDX % 5].add(jnp.stack([u, -u])),
    "x.at[i, j].add": lambda x, u: x.reshape(2, 5).at[PAIRS[0] % 2, PAIRS[1]].add(u),
}


@pytest.mark.parametrize("name", sorted(SCATTERS))
def test_scatter_forms_match_cpu(name):
    """x.at[...] updates (set/add/mul/min/max on a vector and on rows, along the minor dimension, at index
    pairs): repeated indices combine in update order, those past the end are dropped, exactly."""
    assert_matches_cpu(SCATTERS[name], dyadic((10,), 20), dyadic((6,), 21), rtol=0, atol=0)


def avg_pool(x, window, strides, padding="VALID"):
    return jax.lax.reduce_window(x, 0.0, jax.lax.add, window, strides, padding)


def max_pool(x, window, strides, padding="VALID"):
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, window, strides, padding)


POOLS = {
    "1-D max pool of [N,W]": (lambda x: max_pool(x, (1, 3), (1, 2)), (4, 17)),
    "1-D avg pool of [N,W], same padding": (lambda x: avg_pool(x, (1, 3), (1, 1), "SAME"), (4, 17)),
    "max pool of [W]": (lambda x: max_pool(x, (2,), (2,)), (20,)),
    "NCHW max pool": (lambda x: max_pool(x, (1, 1, 3, 3), (1, 1, 2, 2)), (2, 3, 9, 8)),
    "NCHW avg pool": (lambda x: avg_pool(x, (1, 1, 2, 2), (1, 1, 2, 2)), (2, 3, 8, 8)),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_pooling_over_the_minor_dimension_and_its_gradient_match_cpu(name):
    """Windows that touch the minor dimension (pool-minor-through-transpose) and their gradients
    (select-and-scatter for max, a padded sum window for avg), the taps in the interpreter's order: exact
    for these values in eighths."""
    fun, shape = POOLS[name]
    x = dyadic(shape, 30)
    assert_matches_cpu(fun, x, rtol=0, atol=0)
    assert_matches_cpu(jax.grad(lambda x: jnp.sum(fun(x) * jnp.arange(fun(x).size).reshape(fun(x).shape) / 8)), x,
                       rtol=0, atol=0)


def test_variadic_reduces_match_cpu():
    """lax.reduce of a tuple whose parts are independent (split-variadic-reduces: a sum and a maximum, one
    reduce each) and jnp.argmax / argmin of integers (arg-reductions, first position on ties)."""
    x, y = dyadic((5, 9), 40), dyadic((5, 9), 41)
    parts = lambda x, y: jax.lax.reduce((x, y), (0.0, -jnp.inf), lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])),
                                        (1,))
    assert_matches_cpu(parts, x, y, rtol=0, atol=0)
    n = (np.arange(5 * 7 * 9).reshape(5, 7, 9) * 37 % 11 - 5).astype(np.int32)
    fun = lambda n: (jnp.argmax(n, axis=-1), jnp.argmin(n, axis=0), jnp.argmax(n, axis=1), jnp.min(n, axis=1))
    assert_matches_cpu(fun, n, rtol=0, atol=0)


def test_top_k_matches_cpu():
    """lax.top_k (XLA's topk op) in the total order: NaN of both signs, infinities, signed zeros and ties
    in index order, on f32 (rounds of maxima over integer keys) and int32 and bfloat16 (a sort), bit for
    bit as XLA on the CPU."""
    x = np.array([[1.0, np.nan, 3.0, 3.0, -0.0, 0.0, -np.nan, np.inf, -np.inf, 2.0]], np.float32)
    for k in (1, 4, 10):
        # -x on the host: the device's arithmetic makes every NaN the canonical +NaN (docs/numerics.md).
        for values in (x, -x):
            fun = lambda a: jax.lax.top_k(a, k)
            expected = jax.tree_util.tree_map(np.asarray, jax.jit(fun)(values))
            got = tpusim.device_get(device_jit(fun)(values))
            np.testing.assert_array_equal(got[1], expected[1])
            np.testing.assert_array_equal(got[0].view(np.uint32) & 0x807fffff | 0x00400000 * np.isnan(got[0]),
                                          expected[0].view(np.uint32) & 0x807fffff | 0x00400000 * np.isnan(expected[0]))
    y = np.random.default_rng(3).integers(-4, 4, size=(2, 3, 11)).astype(np.int32)
    assert_matches_cpu(lambda a: jax.lax.top_k(a, 5), y, rtol=0, atol=0)
    assert_matches_cpu(lambda a: jax.lax.top_k(a.astype(jnp.bfloat16), 3), random((4, 9), 11), rtol=0, atol=0)


def test_cumulative_products_and_maxima_match_cpu():
    """jnp.cumprod (a reduce-window that multiplies), jnp.cumsum and lax.cummax along both axes, within
    float rounding of XLA on the CPU (the device multiplies the taps in window order)."""
    x = random((5, 12), 13) + 1.0
    for axis in (0, 1):
        assert_matches_cpu(lambda a: (jnp.cumprod(a, axis), jnp.cumsum(a, axis), jax.lax.cummax(a, axis)), x,
                           rtol=2e-6, atol=0)


def scan_products(xs):
    return jax.lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)[1]


def fori_at_add(x):
    return jax.lax.fori_loop(0, 5, lambda i, a: a.at[i].add(x[i] * 2), jnp.zeros(5))


def rows_of_scan(xs):
    """A scan over the rows of a matrix whose carry is one column: xs[i] of a rank-2 xs is a whole row, but
    the carry's ys are stacked along the minor dimension of a transposed output."""
    c, ys = jax.lax.scan(lambda c, x: (c * 0.5 + x[1:3], x[0] - c[0]), jnp.zeros(2), xs)
    return c, ys


MINOR_WINDOWS = {
    "scan over f32[7]": (scan_products, lambda: (dyadic((7,), 50),)),
    "fori_loop a.at[i].add": (fori_at_add, lambda: (dyadic((5,), 51),)),
    "scan over the rows of f32[6,4]": (rows_of_scan, lambda: (dyadic((6, 4), 52),)),
    "dynamic_slice (i, j) of f32[5,7]": (lambda x, i, j: jax.lax.dynamic_slice(x, (i, j), (2, 3)),
                                         lambda: (dyadic((5, 7), 53), np.int32(2), np.int32(6))),
    "dynamic_slice (i, j) clamped below": (lambda x, i, j: jax.lax.dynamic_slice(x, (i, j), (2, 3)),
                                           lambda: (dyadic((5, 7), 54), np.int32(-3), np.int32(1))),
    "dynamic_update_slice (i, j) of f32[5,7]": (
        lambda x, u, i, j: jax.lax.dynamic_update_slice(x, u, (i, j)),
        lambda: (dyadic((5, 7), 55), dyadic((2, 3), 56), np.int32(1), np.int32(9))),
    "one column into f32[3,4,6] at (i, j, k)": (
        lambda x, u, i, j, k: jax.lax.dynamic_update_slice(x, u, (i, j, k)),
        lambda: (dyadic((3, 4, 6), 57), dyadic((2, 4, 1), 58), np.int32(2), np.int32(0), np.int32(3))),
    "window of f32[3,4,6] on three dimensions": (
        lambda x, i, j, k: jax.lax.dynamic_slice(x, (i, j, k), (1, 2, 2)),
        lambda: (dyadic((3, 4, 6), 59), np.int32(1), np.int32(3), np.int32(4))),
    "x[i] of a traced i": (lambda x, i: x[i] * x[i - 1], lambda: (dyadic((9,), 60), np.int32(0))),
}


@pytest.mark.parametrize("name", sorted(MINOR_WINDOWS))
def test_windows_on_the_minor_dimension_and_their_gradients_match_cpu(name):
    """dynamic-slice / dynamic-update-slice windows over part of the minor dimension (dynamic-slice-minor-to-
    rows): scans over vectors and their stacked scalar outputs, x[i] and a.at[i] in fori_loop bodies, traced
    starts clamped as XLA clamps them, and the gradients (reverse scans), exactly."""
    fun, make = MINOR_WINDOWS[name]
    args = make()
    assert_matches_cpu(fun, *args, rtol=0, atol=0)
    loss = lambda x, *rest: sum(jnp.sum(leaf * leaf) for leaf in jax.tree_util.tree_leaves(fun(x, *rest)))
    assert_matches_cpu(jax.grad(loss), *args, rtol=0, atol=0)


def test_searchsorted_and_unsigned_index_gathers_and_scatters_match_cpu():
    """jnp.searchsorted gathers at u32 indices (row-gathers converts them: 2^31 and more clamp to the last
    position); gathers and scatters at u32, u8, s16 indices, past the end too (clamped or dropped)."""
    x = dyadic((12,), 61)
    assert_matches_cpu(lambda x: jnp.searchsorted(jnp.sort(x), x), x, rtol=0, atol=0)
    assert_matches_cpu(lambda s, q: jnp.searchsorted(s, q, side="right"), np.sort(x), dyadic((7,), 62), rtol=0, atol=0)
    big = np.array([3, 0, 2**31, 2**32 - 1, 11, 12, 5], np.uint32)
    mode = dict(mode="promise_in_bounds")  # no jnp index wrapping: the gather sees the raw indices
    assert_matches_cpu(lambda x, i: x.at[i].get(**mode), x, big, rtol=0, atol=0)
    assert_matches_cpu(lambda x, i, u: x.at[i].add(u, mode="drop"), x, big, dyadic((7,), 63), rtol=0, atol=0)
    assert_matches_cpu(lambda x, i: x.reshape(4, 3)[i], x, np.array([3, 0, 200, 1], np.uint8), rtol=0, atol=0)
    assert_matches_cpu(lambda x, i, u: x.at[i].set(u, mode="drop"), x, np.array([-1, 4, 13, 4], np.int16),
                       dyadic((4,), 64), rtol=0, atol=0)
