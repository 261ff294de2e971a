"""Keras 3 models on the simulated TPU: the seeds' Keras code, run through the JAX backend.

    os.environ["KERAS_BACKEND"] = "jax"          # before importing keras
    model = keras.Sequential([...])               # ends in logits (no softmax)
    trainer = tpusim.keras_bridge.model(model, keras.optimizers.Adam(1e-3), config="v2")
    trainer.fit(x_train, y_train, epochs=5, batch_size=128, validation_data=(x_test, y_test))
    tpusim.keras_bridge.copy_to_keras(trainer, model, optimizer)   # the trained weights back in Keras

Keras 3 on JAX exposes every layer and optimizer as pure functions of their variables
(``Model.stateless_call``, ``Optimizer.stateless_apply``): the training step below is built from those,
so JAX lowers it to HLO like any jitted function and the bridge runs it on the device. The loss is
sparse categorical cross-entropy on the model's logits, as
``keras.losses.SparseCategoricalCrossentropy(from_logits=True)``. Non-trainable variables (batch-norm
statistics) are carried through the step as Keras updates them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import training


class KerasRecipe:
    """Initialisation, training and evaluation steps of a built Keras model and its optimizer, in the form
    ``tpusim.Model`` compiles (see training.FlaxRecipe). params = (trainable, non_trainable) values,
    opt_state = the optimizer's variable values."""

    def __init__(self, keras_model, optimizer):
        if not keras_model.built:
            raise ValueError("build the Keras model first (give it an Input or call it once)")
        self.keras_model = keras_model
        self.optimizer = optimizer
        optimizer.build(keras_model.trainable_variables)

    def init(self, seed: int, sample_x):
        """The model's and optimizer's current variable values (Keras initialised them when they were
        built; seed them with keras.utils.set_random_seed)."""
        trainable = [np.asarray(v.value) for v in self.keras_model.trainable_variables]
        non_trainable = [np.asarray(v.value) for v in self.keras_model.non_trainable_variables]
        return (trainable, non_trainable), [np.asarray(v.value) for v in self.optimizer.variables]

    def train_step(self, replicas: int = 1):
        """The training step; with replicas above 1, one replica's (as training.make_train_step): the
        gradients and the loss summed over the replicas, the new floating-point non-trainable values (moving
        statistics) averaged over them."""
        model, optimizer = self.keras_model, self.optimizer

        def train_step(params, opt_state, x, labels):
            trainable, non_trainable = params

            def loss_fn(trainable):
                logits, new_non_trainable = model.stateless_call(trainable, non_trainable, x, training=True)
                losses, onehot = training.sparse_categorical_crossentropy(logits, labels)
                return training.average_loss(losses, replicas), (logits, onehot, new_non_trainable)

            (loss, (logits, onehot, non_trainable)), grads = jax.value_and_grad(loss_fn, has_aux=True)(trainable)
            correct = jnp.sum(training.correct_predictions(logits, onehot))
            grads, loss, correct = training.all_reduce_sum((grads, loss, correct), replicas)
            if replicas > 1:
                non_trainable = [jax.lax.pmean(value, training.DATA_AXIS) if jnp.issubdtype(value.dtype, jnp.floating)
                                 else value for value in non_trainable]
            trainable, opt_state = optimizer.stateless_apply(opt_state, grads, trainable)
            return (list(trainable), list(non_trainable)), list(opt_state), loss, correct

        return train_step

    def eval_step(self):
        model = self.keras_model

        def logits(params, x):
            trainable, non_trainable = params
            return model.stateless_call(trainable, non_trainable, x, training=False)[0]

        return training.make_eval_step(logits)


def sequential(name: str, classes: int = 10):
    """The trainer's models (tpusim.models) written in Keras: 'mlp', 'cnn', or 'seeds' (the seeds' Keras
    example: Conv2D(256, 3, relu) twice, Flatten, Dense 256/128/10), on [n, 28, 28] images, ending in
    logits."""
    import keras
    from keras import layers

    image = [keras.Input((28, 28)), layers.Reshape((28, 28, 1))]
    stacks = {
        "mlp": [keras.Input((28, 28)), layers.Flatten(), layers.Dense(256, activation="relu"),
                layers.Dense(128, activation="relu")],
        "cnn": image + [layers.Conv2D(16, 3, activation="relu"), layers.Conv2D(32, 3, activation="relu"),
                        layers.MaxPooling2D(2), layers.Flatten()],
        "seeds": image + [layers.Conv2D(256, 3, activation="relu"), layers.Conv2D(256, 3, activation="relu"),
                          layers.Flatten(), layers.Dense(256, activation="relu"), layers.Dense(128, activation="relu")],
    }
    if name not in stacks:
        raise ValueError(f"unknown model '{name}'; known: {', '.join(stacks)}")
    return keras.Sequential(stacks[name] + [layers.Dense(classes)], name=name)


def model(keras_model, optimizer, **options) -> training.Model:
    """A ``tpusim.Model`` that trains ``keras_model`` with ``optimizer`` (options: backend, config,
    dot_passes, precision, seed, out, as ``tpusim.Model``)."""
    return training.Model(recipe=KerasRecipe(keras_model, optimizer), **options)


def copy_to_keras(trainer: training.Model, keras_model, optimizer) -> None:
    """Assigns the device's trained values to the Keras model's and optimizer's variables."""
    (trainable, non_trainable), opt_state = trainer.state()
    for variable, value in zip(keras_model.trainable_variables, trainable):
        variable.assign(value)
    for variable, value in zip(keras_model.non_trainable_variables, non_trainable):
        variable.assign(value)
    for variable, value in zip(optimizer.variables, opt_state):
        variable.assign(value)
