"""Keras 3 (JAX backend) models through the bridge: the device's steps follow the same Keras step run by
XLA on the CPU, fit's loss falls, and the trained weights go back into the Keras model."""

import io
import os

os.environ["KERAS_BACKEND"] = "jax"

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

from tpusim import data, keras_bridge  # noqa: E402

CONFIG = os.environ.get("TPU_CONFIG", "tiny")


def seeds_style_mlp():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((28, 28)), keras.layers.Flatten(), keras.layers.Dense(64, activation="relu"),
                             keras.layers.Dense(10)])


def test_keras_steps_follow_the_cpu_and_weights_return_to_keras():
    (x, y), _ = data.load_fashion_mnist()
    model, optimizer = seeds_style_mlp(), keras.optimizers.Adam(1e-3)
    trainer = keras_bridge.model(model, optimizer, config="v2", precision="high", out=io.StringIO())
    recipe = trainer.recipe
    params, opt_state = recipe.init(0, x[:32])
    cpu_step = jax.jit(recipe.train_step())
    cpu_losses = []
    order = data.epoch_order(0, 0, 96)  # fit's batches: seed 0, epoch 0
    for i in range(3):
        batch = order[32 * i:32 * (i + 1)]
        params, opt_state, loss, _ = cpu_step(params, opt_state, x[batch], y[batch])
        cpu_losses.append(float(loss))
    trainer.fit(x[:96], y[:96], epochs=1, batch_size=32)
    np.testing.assert_allclose(trainer.step_losses, cpu_losses, rtol=1e-3)
    keras_bridge.copy_to_keras(trainer, model, optimizer)
    kernel = np.asarray(model.trainable_variables[0].value)
    np.testing.assert_array_equal(kernel, trainer.state()[0][0][0])
    np.testing.assert_allclose(kernel, np.asarray(params[0][0]), rtol=1e-2, atol=1e-4)
    assert int(np.asarray(optimizer.iterations.value)) == 3


def test_keras_fit_loss_falls():
    (x, y), (x_test, y_test) = data.load_fashion_mnist()
    trainer = keras_bridge.model(seeds_style_mlp(), keras.optimizers.Adam(3e-3), config=CONFIG, out=io.StringIO())
    history = trainer.fit(x[:1024], y[:1024], epochs=2, batch_size=64, validation_data=(x_test[:256], y_test[:256]))
    assert history["loss"][1] < history["loss"][0]
    assert history["val_sparse_categorical_accuracy"][1] > 0.5
