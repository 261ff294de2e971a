"""Device vs XLA on the CPU: the same training step, weights and batches, step by step.

``python -m tpusim.parity --model mlp --steps 20`` prints
``parity model=mlp steps=20 max_rel_loss_diff=X max_rel_param_diff=Y`` where X is the largest
|loss_device - loss_cpu| / |loss_cpu| over the steps and Y the largest relative difference of the final
parameters, ||a - b|| / ||b|| (Euclidean norms) over the arrays. Adam divides each gradient by its own
running magnitude, so a weight whose gradient is almost zero (a pixel that is black in nearly every image)
moves by about the learning rate either way and single elements can differ by that much; norms say how
far the model as a whole moved apart.

The device step is lowered at HIGH matmul precision (three bf16 MXU passes per dot, bf16_3x), the
precision a comparison with f32 on the CPU asks for; ``--precision`` and ``--dot-passes`` change it.
"""

from __future__ import annotations

import argparse
import sys

import jax
import numpy as np
import optax

from . import bridge, data, models
from .training import FlaxRecipe


def run(model_name: str, steps: int, *, batch_size: int = 128, backend: str = "model", config: str = "v2",
        dot_passes: int = 0, precision: str = "high", seed: int = 0, learning_rate: float = 1e-3):
    """(device losses, CPU losses, device params, CPU params) after ``steps`` Adam steps on Fashion-MNIST."""
    recipe = FlaxRecipe(models.by_name(model_name), optax.adam(learning_rate))
    (x, y), _ = data.load_fashion_mnist()
    order = data.epoch_order(seed, 0, len(x))
    state = recipe.init(seed, x[:batch_size])

    cpu_step = jax.jit(recipe.train_step())
    device_step = bridge.jit(recipe.train_step(), donate_argnums=(0, 1), backend=backend,
                             config=config, dot_passes=dot_passes, precision=precision)
    cpu_params, cpu_opt = state
    dev_params, dev_opt = bridge.device_put(state, device_step.client)
    cpu_losses, device_losses = [], []
    for step in range(steps):
        batch = order[step * batch_size:(step + 1) * batch_size]
        cpu_params, cpu_opt, cpu_loss, _ = cpu_step(cpu_params, cpu_opt, x[batch], y[batch])
        dev_params, dev_opt, dev_loss, _ = device_step(dev_params, dev_opt, x[batch], y[batch])
        cpu_losses.append(float(cpu_loss))
        device_losses.append(float(dev_loss))
    return (np.array(device_losses), np.array(cpu_losses), bridge.device_get(dev_params),
            jax.device_get(cpu_params))


def relative_differences(device_losses, cpu_losses, device_params, cpu_params):
    loss_diff = float(np.max(np.abs(device_losses - cpu_losses) / np.abs(cpu_losses)))
    param_diff = max(float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
                     for a, b in zip(jax.tree_util.tree_leaves(device_params), jax.tree_util.tree_leaves(cpu_params)))
    return loss_diff, param_diff


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpusim.parity", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="mlp", choices=sorted(models.MODELS))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--backend", default="model")
    parser.add_argument("--config", default="v2")
    parser.add_argument("--precision", default="high", choices=["default", "high", "highest"],
                        help="matmul precision of the device step (DEFAULT 1, HIGH 3, HIGHEST 6 MXU passes)")
    parser.add_argument("--dot-passes", type=int, default=0, choices=[0, 1, 3, 6],
                        help="MXU passes forced on every f32 dot (0: each dot's precision)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    results = run(args.model, args.steps, batch_size=args.batch_size, backend=args.backend, config=args.config,
                  dot_passes=args.dot_passes, precision=args.precision)
    loss_diff, param_diff = relative_differences(*results)
    print(f"parity model={args.model} steps={args.steps} max_rel_loss_diff={loss_diff:.3g} "
          f"max_rel_param_diff={param_diff:.3g} precision={args.precision} dot_passes={args.dot_passes} "
          f"config={args.config}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
