"""The verilated chip (rtl backend, this build's configuration) against the reference model: the first
training steps of the MLP, on one device and data-parallel on two, leave byte-identical parameters and
optimizer state on both."""

import os

import jax
import numpy as np
import optax

import tpusim
from tpusim import data, models
from tpusim.training import FlaxRecipe, data_parallel

CONFIG = os.environ.get("TPU_CONFIG", "tiny")
STEPS, BATCH = 3, 8
RECIPE = FlaxRecipe(models.MLP(), optax.adam(1e-3))
# The data-parallel step adds an all-reduce per parameter: on tiny the 784-256-128-10 MLP's no longer fits
# the instruction memory, one hidden layer of 32 does.
SMALL_RECIPE = FlaxRecipe(models.MLP(hidden=(32,)), optax.adam(1e-3))


def train(backend, x, y, state, devices=1, recipe=RECIPE):
    fun = recipe.train_step() if devices == 1 else data_parallel(recipe.train_step(devices), devices)
    step = tpusim.jit(fun, donate_argnums=(0, 1), backend=backend, config=CONFIG)
    params, opt_state = tpusim.device_put(state, step.client)
    losses, cycles = [], []
    for i in range(STEPS):
        params, opt_state, loss, _ = step(params, opt_state, x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH])
        losses.append(np.asarray(loss))
        cycles.append(step.last_counters["cycles"])
    return tpusim.device_get((params, opt_state)), losses, cycles


def test_mlp_steps_are_byte_identical_on_rtl_and_model():
    (x, y), _ = data.load_fashion_mnist()
    state = RECIPE.init(0, x[:BATCH])
    rtl_state, rtl_losses, rtl_cycles = train("rtl", x, y, state)
    model_state, model_losses, _ = train("model", x, y, state)
    assert [l.tobytes() for l in rtl_losses] == [l.tobytes() for l in model_losses]
    rtl_leaves, model_leaves = jax.tree_util.tree_leaves(rtl_state), jax.tree_util.tree_leaves(model_state)
    assert len(rtl_leaves) == len(model_leaves) == 19
    for a, b in zip(rtl_leaves, model_leaves):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert not np.array_equal(rtl_leaves[1], jax.tree_util.tree_leaves(state)[1])  # the weights did move
    print(f"rtl cycles per step: {rtl_cycles}")


def test_data_parallel_mlp_steps_are_byte_identical_on_rtl_and_model():
    (x, y), _ = data.load_fashion_mnist()
    state = SMALL_RECIPE.init(0, x[:BATCH])
    rtl_state, rtl_losses, rtl_cycles = train("rtl", x, y, state, devices=2, recipe=SMALL_RECIPE)
    model_state, model_losses, _ = train("model", x, y, state, devices=2, recipe=SMALL_RECIPE)
    assert [l.tobytes() for l in rtl_losses] == [l.tobytes() for l in model_losses]
    for a, b in zip(jax.tree_util.tree_leaves(rtl_state), jax.tree_util.tree_leaves(model_state)):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    print(f"rtl cycles per data-parallel step on 2 devices: {rtl_cycles}")
