"""The seeds' correctness recipe in one command: the same model, initial weights and global batches trained
on the CPU (XLA through JAX), on one core and on all the cores of the board (data-parallel, TPUStrategy's
way: each core global_batch / cores examples, the loss averaged over the global batch, the gradients
all-reduced in the step), twice each.

``python -m tpusim.determinism --steps=1000`` prints
``determinism steps=1000 rerun_identical=1 rel_diff_1core_vs_cpu=X rel_diff_8core_vs_1core=Y`` where
rerun_identical says whether each backend's second run gave the same losses and final weights, bit for
bit, as its first; X and Y are the relative differences of the final loss, |a - b| / |b| (the seeds'
closeness: at most 1e-2). The final loss is the mean training loss of the last ``--final-steps`` steps
(100), as Keras's progress line averages it: one batch's loss varies by several percent from batch to
batch, more than the backends differ. The last step's losses are printed too. The core count in the
name of Y is the board's (``--devices``); ``--save=FILE.npz`` keeps every run's losses.
"""

from __future__ import annotations

import argparse
import sys

import jax
import numpy as np
import optax

from . import bridge, data, models
from .training import FlaxRecipe, Model


def batches(order_seed: int, examples: int, steps: int, batch_size: int):
    """The example indices of each step's global batch: epochs of the seeded order, one after the other."""
    indices = []
    epoch = 0
    while len(indices) < steps * batch_size:
        indices.extend(data.epoch_order(order_seed, epoch, examples).tolist())
        epoch += 1
    return [np.asarray(indices[s * batch_size:(s + 1) * batch_size]) for s in range(steps)]


def train(step_fn, state, x, y, order):
    """Runs `step_fn` over the batches: (losses, final params)."""
    params, opt_state = state
    losses = []
    for batch in order:
        params, opt_state, loss, _ = step_fn(params, opt_state, x[batch], y[batch])
        losses.append(float(loss))
    return np.array(losses), params


def identical(run_a, run_b) -> bool:
    losses_a, params_a = run_a
    losses_b, params_b = run_b
    same_params = all(np.array_equal(a, b) for a, b in zip(jax.tree_util.tree_leaves(params_a),
                                                           jax.tree_util.tree_leaves(params_b)))
    return bool(np.array_equal(losses_a, losses_b) and same_params)


def relative(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


def run(*, steps: int, batch_size: int, devices: int | None, model_name: str, backend: str, config: str,
        precision: str, seed: int, learning_rate: float, final_steps: int = 100, save: str | None = None,
        out=sys.stdout):
    (x, y), _ = data.load_fashion_mnist()
    order = batches(seed, len(x), steps, batch_size)
    recipe = FlaxRecipe(models.by_name(model_name), optax.adam(learning_rate))
    state = recipe.init(seed, x[:batch_size])

    def cpu_run():
        return train(jax.jit(recipe.train_step()), state, x, y, order)

    def device_run(cores: int):
        model = Model(recipe=recipe, backend=backend, config=config, precision=precision, devices=cores, seed=seed)
        model.set_state(state)
        losses, params = train(model.train_step, (model.params, model.opt_state), x, y, order)
        replicas = model.replica_states() if cores > 1 else None
        if replicas is not None:
            for d, (replica_params, _) in enumerate(replicas):
                for a, b in zip(jax.tree_util.tree_leaves(replica_params),
                                jax.tree_util.tree_leaves(replicas[0][0])):
                    if not np.array_equal(a, b):
                        raise AssertionError(f"core {d} holds other weights than core 0 after {steps} steps")
        return losses, bridge.device_get(params)

    client_devices = len(bridge.get_client(backend, config, 0).devices)
    cores = devices or client_devices
    runs = {}
    final = {}
    for name, fn in (("cpu", cpu_run), ("1core", lambda: device_run(1)), (f"{cores}core", lambda: device_run(cores))):
        runs[name] = (fn(), fn())
        losses = runs[name][0][0]
        final[name] = float(np.mean(losses[-final_steps:]))
        print(f"determinism backend={name} final_loss={final[name]:.6f} last_step_loss={losses[-1]:.6f} "
              f"rerun_identical={int(identical(*runs[name]))}", file=out, flush=True)
        if save:
            np.savez(save, **{f"{n}_run{k}": pair[k][0] for n, pair in runs.items() for k in (0, 1)})
    rerun = all(identical(*pair) for pair in runs.values())
    one_vs_cpu = relative(final["1core"], final["cpu"])
    many_vs_one = relative(final[f"{cores}core"], final["1core"])
    print(f"determinism steps={steps} rerun_identical={int(rerun)} rel_diff_1core_vs_cpu={one_vs_cpu:.3g} "
          f"rel_diff_{cores}core_vs_1core={many_vs_one:.3g} final_steps={final_steps} batch_size={batch_size} "
          f"cores={cores} config={config} backend={backend} precision={precision}", file=out, flush=True)
    return rerun, one_vs_cpu, many_vs_one


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpusim.determinism", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=128, help="the global batch")
    parser.add_argument("--devices", type=int, default=0, help="cores of the data-parallel runs (0: all)")
    parser.add_argument("--model", default="mlp", choices=sorted(models.MODELS))
    parser.add_argument("--backend", default="model")
    parser.add_argument("--config", default="v2")
    parser.add_argument("--precision", default="high", choices=["default", "high", "highest"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--final-steps", type=int, default=100, help="steps the final loss is the mean of")
    parser.add_argument("--save", default=None, help="an .npz file for every run's losses")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    rerun, one_vs_cpu, many_vs_one = run(steps=args.steps, batch_size=args.batch_size, devices=args.devices or None,
                                         model_name=args.model, backend=args.backend, config=args.config,
                                         precision=args.precision, seed=args.seed, learning_rate=args.learning_rate,
                                         final_steps=args.final_steps, save=args.save)
    return 0 if rerun and one_vs_cpu <= 1e-2 and many_vs_one <= 1e-2 else 1


if __name__ == "__main__":
    sys.exit(main())
