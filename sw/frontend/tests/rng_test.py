"""rng-bit-generator (jax.lax.rng_bit_generator, JAX's 'rbg' and 'unsafe_rbg' keys) against XLA on the CPU:
the project's interpreter bit for bit for every algorithm, width and shape, and the device (a key passed
in u32 words: rng-bit-generator-expansion; a constant key: folded) bit for bit too."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import _tpusim
import tpusim

CONFIG = os.environ.get("TPU_CONFIG", "tiny")
ALGORITHMS = {
    "default": jax.lax.RandomAlgorithm.RNG_DEFAULT,
    "three_fry": jax.lax.RandomAlgorithm.RNG_THREE_FRY,
    "philox": jax.lax.RandomAlgorithm.RNG_PHILOX,
}
SHAPES = [(), (1,), (7,), (130,), (3, 5), (4, 3), (2, 3, 5), (5, 1, 3)]
# Counters that carry from the low word into the high one and wrap around 2^64.
KEYS = [
    np.array([0, 0, 0, 0], np.uint32),
    np.array([0xDEADBEEF, 0x12345678, 0xFFFFFFF0, 0x7], np.uint32),
    np.array([1, 2, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32),
]


def device_jit(fun):
    return tpusim.jit(fun, backend="model", config=CONFIG)


def generator(algorithm, shape, dtype):
    return lambda key: jax.lax.rng_bit_generator(key, shape, dtype=dtype, algorithm=ALGORITHMS[algorithm])


def interpret(fun, *args):
    hlo_text, _ = device_jit(fun).lower(*args)
    return _tpusim.interpret(hlo_text, [np.asarray(a) for a in args])


def assert_same_bits(expected, got):
    expected = [np.asarray(e) for e in jax.tree_util.tree_leaves(expected)]
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
def test_interpreter_matches_cpu_bit_for_bit(algorithm, dtype):
    for shape in SHAPES:
        fun = generator(algorithm, shape, dtype)
        for key in KEYS:
            assert_same_bits(jax.jit(fun)(key), interpret(fun, key))


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_interpreter_matches_cpu_for_u64_bits(algorithm):
    with jax.enable_x64(True):
        for shape in SHAPES:
            fun = generator(algorithm, shape, np.uint64)
            for key in KEYS:
                expected = jax.jit(fun)(key)
                assert np.asarray(expected[1]).dtype == np.uint64
                hlo_text = jax.jit(fun).lower(key).as_text(dialect="hlo")
                assert_same_bits(expected, _tpusim.interpret(hlo_text, [key]))


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_rbg_keys_uniform_and_normal_match_cpu_in_the_interpreter(impl):
    def sample(data, x):
        key = jax.random.wrap_key_data(data, impl=impl)
        k1, k2 = jax.random.split(key)
        return x + jax.random.uniform(k1, x.shape), jax.random.normal(k2, (7, 3)), jax.random.bits(k2, (5,))
    x = np.linspace(-1, 1, 26, dtype=np.float32).reshape(2, 13)
    for key in KEYS:
        expected = [np.asarray(v) for v in jax.tree_util.tree_leaves(jax.jit(sample)(key, x))]
        got = interpret(sample, key, x)
        np.testing.assert_array_equal(got[0], expected[0])  # uniform: shifts, or, bitcast, exact arithmetic
        np.testing.assert_array_equal(got[2], expected[2])
        # normal: erfinv's log and polynomial, within a few ulp of XLA's.
        np.testing.assert_allclose(got[1], expected[1], rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
@pytest.mark.parametrize("dtype", [np.uint8, np.uint32])
@pytest.mark.parametrize("shape", [(), (7,), (3, 5), (2, 3, 5)])
def test_device_matches_cpu_for_a_key_in_u32_words(algorithm, dtype, shape):
    fun = generator(algorithm, shape, dtype)
    for key in KEYS:
        assert_same_bits(jax.jit(fun)(key), [np.asarray(v) for v in tpusim.device_get(device_jit(fun)(key))])


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_device_matches_cpu_for_rbg_keys_passed_in(impl):
    """A key the program takes: split (threefry for 'rbg', the generator itself for 'unsafe_rbg'), uniform
    floats, raw bits and the new key's data, all bit for bit on the device."""
    def sample(data, x):
        key = jax.random.wrap_key_data(data, impl=impl)
        k1, k2 = jax.random.split(key)
        return x + jax.random.uniform(k1, x.shape), jax.random.bits(k2, (5,)), jax.random.key_data(k2)
    x = np.linspace(-1, 1, 26, dtype=np.float32).reshape(2, 13)
    for key in KEYS:
        assert_same_bits(jax.jit(sample)(key, x),
                         [np.asarray(v) for v in jax.tree_util.tree_leaves(tpusim.device_get(device_jit(sample)(key, x)))])


def test_device_matches_cpu_for_a_constant_rbg_key():
    """jax.random.key(0, impl='rbg') under jit: the bits fold at compile time, the rest runs on the device."""
    def noisy(x):
        key = jax.random.key(0, impl="rbg")
        k1, k2 = jax.random.split(key)
        return x * jax.random.uniform(k1, x.shape), jax.random.bits(k2, x.shape)
    x = np.linspace(-3, 3, 45, dtype=np.float32).reshape(9, 5)
    assert_same_bits(jax.jit(noisy)(x), [np.asarray(v) for v in tpusim.device_get(device_jit(noisy)(x))])


def test_device_refuses_u64_state_it_cannot_hold():
    """A u64 state computed on the device (not u32 words) is refused with the reason, never truncated."""
    def stateful(key):
        state = jax.lax.bitcast_convert_type(key.reshape(2, 2), jnp.uint64) + np.uint64(1)
        return jax.lax.rng_bit_generator(state, (4,), dtype=jnp.uint32)[1]
    with jax.enable_x64(True):
        with pytest.raises(_tpusim.UnimplementedError, match="is computed as u64.*low 32 bits"):
            device_jit(stateful)(KEYS[1])
