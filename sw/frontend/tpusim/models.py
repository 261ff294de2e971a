"""Models the trainer knows by name, written in Flax as a user would write them for a TPU."""

from __future__ import annotations

import flax.linen as nn
import jax.numpy as jnp


class MLP(nn.Module):
    """784-256-128-10 with ReLU: images are flattened."""
    hidden: tuple[int, ...] = (256, 128)
    classes: int = 10

    @nn.compact
    def __call__(self, x):
        x = x.reshape((x.shape[0], -1))
        for width in self.hidden:
            x = nn.relu(nn.Dense(width)(x))
        return nn.Dense(self.classes)(x)


class CNN(nn.Module):
    """Two 3x3 convolutions (ReLU), a 2x2 max pool and a dense layer, on [n, 28, 28] images."""
    channels: tuple[int, int] = (16, 32)
    classes: int = 10

    @nn.compact
    def __call__(self, x):
        x = x.reshape((x.shape[0], 28, 28, 1))
        x = nn.relu(nn.Conv(self.channels[0], (3, 3), padding="VALID")(x))
        x = nn.relu(nn.Conv(self.channels[1], (3, 3), padding="VALID")(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        return nn.Dense(self.classes)(x)


class SeedsKerasModel(nn.Module):
    """The seeds' Keras example: Conv2D(256, 3, relu) twice on 28x28x1, Flatten, Dense 256/128/10."""
    classes: int = 10

    @nn.compact
    def __call__(self, x):
        x = x.reshape((x.shape[0], 28, 28, 1))
        x = nn.relu(nn.Conv(256, (3, 3), padding="VALID")(x))
        x = nn.relu(nn.Conv(256, (3, 3), padding="VALID")(x))
        x = x.reshape((x.shape[0], -1))
        x = nn.relu(nn.Dense(256)(x))
        x = nn.relu(nn.Dense(128)(x))
        return nn.Dense(self.classes)(x)


MODELS = {"mlp": MLP, "cnn": CNN, "seeds": SeedsKerasModel}


def by_name(name: str) -> nn.Module:
    if name not in MODELS:
        raise ValueError(f"unknown model '{name}'; known: {', '.join(MODELS)}")
    return MODELS[name]()


def image_input(batch: int) -> jnp.ndarray:
    """A zero batch of Fashion-MNIST-shaped images, for initialisation."""
    return jnp.zeros((batch, 28, 28), jnp.float32)
