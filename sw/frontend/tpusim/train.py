"""Command-line trainer: ``python -m tpusim.train --model mlp --epochs 5``.

Trains a model by name (mlp, cnn, seeds) on Fashion-MNIST on the simulated TPU, prints the Keras epoch
lines (validated on the test set), evaluates on it and ends with one summary line:

    train model=mlp epochs=5 test_accuracy=0.8887 host_s_per_epoch=115.2 host_cpu_s_per_epoch=110.1 device_ms_per_step=0.335

host_s is wall time, host_cpu_s the process's CPU time (what a loaded machine does not inflate);
device_ms_per_step is the last training step's device cycles at the chip's clock (with
--steps-per-execution, the last loop's per step; with --devices, the slowest device's).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import optax

from . import bridge, data, models
from .training import Model

OPTIMIZERS = {"adam": optax.adam, "sgd": optax.sgd, "rmsprop": optax.rmsprop}


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m tpusim.train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="mlp", choices=sorted(models.MODELS))
    parser.add_argument("--framework", default="flax", choices=["flax", "keras"],
                        help="write the model in Flax with an optax optimizer, or in Keras 3 (JAX backend)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--optimizer", default="adam", choices=sorted(OPTIMIZERS))
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--schedule", default="linear", choices=["constant", "linear"],
                        help="learning rate: constant, or decaying linearly to 0 over the epochs")
    parser.add_argument("--backend", default="model", choices=["model", "rtl"])
    parser.add_argument("--config", default="v2", help="hardware configuration (rtl/config/<name>.cfg)")
    parser.add_argument("--precision", default=None, choices=["default", "high", "highest"],
                        help="matmul precision the steps are lowered at; a dot's precision chooses its MXU passes "
                             "as on a TPU (DEFAULT 1, HIGH 3, HIGHEST 6); unset: JAX's default")
    parser.add_argument("--dot-passes", type=int, default=0, choices=[0, 1, 3, 6],
                        help="MXU passes forced on every f32 dot (0: each dot's precision)")
    parser.add_argument("--seed", type=int, default=0, help="initial parameters and data order")
    parser.add_argument("--steps-per-execution", type=int, default=1,
                        help="training steps per host call: above 1, a device loop fed through the infeed; "
                             "log lines, checkpoints and Ctrl-C happen between calls")
    parser.add_argument("--devices", type=int, default=1,
                        help="data-parallel training on this many devices (TPUStrategy): each gets batch-size / "
                             "devices examples of every batch, the gradients are all-reduced in the step")
    parser.add_argument("--checkpoint", default=None, help="resume from this file if it exists; save to it")
    parser.add_argument("--stop-after-steps", type=int, default=None,
                        help="stop (and checkpoint) after this many steps in all")
    parser.add_argument("--train-examples", type=int, default=None, help="use only the first N training images")
    parser.add_argument("--data-dir", default=data.FASHION_MNIST_DIR)
    parser.add_argument("--no-validation", action="store_true", help="skip the per-epoch test-set evaluation")
    parser.add_argument("--profile-step", type=int, default=None,
                        help="run this global step (from 0) with the issue trace on and print where its cycles go")
    parser.add_argument("--profile-dir", default=None,
                        help="write the profiled step's Chrome trace and HTML report here")
    return parser.parse_args(argv)


def keras_model(args, total_steps: int, options) -> Model:
    """The named model and optimizer in Keras 3 (JAX backend), seeded with --seed; the learning rate
    decays linearly to 0 over total_steps as with Flax (PolynomialDecay of power 1)."""
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras

    from . import keras_bridge
    if keras.backend.backend() != "jax":
        raise ValueError("--framework=keras needs KERAS_BACKEND=jax (set before keras is imported)")
    keras.utils.set_random_seed(args.seed)
    learning_rate = (keras.optimizers.schedules.PolynomialDecay(args.learning_rate, total_steps, 0.0)
                     if args.schedule == "linear" else args.learning_rate)
    optimizers = {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD, "rmsprop": keras.optimizers.RMSprop}
    return keras_bridge.model(keras_bridge.sequential(args.model), optimizers[args.optimizer](learning_rate),
                              **options)


def build_model(args, total_steps: int) -> Model:
    """The model, optimizer and learning-rate schedule the arguments name, for total_steps steps."""
    options = dict(backend=args.backend, config=args.config, dot_passes=args.dot_passes, seed=args.seed,
                   precision=args.precision, steps_per_execution=args.steps_per_execution, devices=args.devices)
    if args.framework == "keras":
        return keras_model(args, total_steps, options)
    learning_rate = (optax.linear_schedule(args.learning_rate, 0.0, total_steps) if args.schedule == "linear"
                     else args.learning_rate)
    return Model(models.by_name(args.model), OPTIMIZERS[args.optimizer](learning_rate), **options)


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    (x_train, y_train), (x_test, y_test) = data.load_fashion_mnist(args.data_dir)
    if args.train_examples:
        x_train, y_train = x_train[:args.train_examples], y_train[:args.train_examples]
    model = build_model(args, args.epochs * data.batch_count(len(x_train), args.batch_size))
    start, start_cpu = time.perf_counter(), time.process_time()
    history = model.fit(x_train, y_train, epochs=args.epochs, batch_size=args.batch_size,
                        validation_data=None if args.no_validation else (x_test, y_test),
                        checkpoint_path=args.checkpoint, stop_after_steps=args.stop_after_steps,
                        profile_step=args.profile_step, profile_dir=args.profile_dir)
    host_seconds, host_cpu_seconds = time.perf_counter() - start, time.process_time() - start_cpu
    if model.interrupted:
        where = f"; checkpoint {args.checkpoint}" if args.checkpoint else ""
        print(f"train model={args.model} interrupted at step {model.position.global_step}{where}")
        return 130
    epochs_run = len(history.get("loss", []))
    _, test_accuracy = model.evaluate(x_test, y_test, batch_size=args.batch_size)
    device_ms = model.last_execution_cycles / max(model.last_execution_steps, 1) / bridge.CLOCK_HZ * 1e3
    print(f"train model={args.model} epochs={model.position.epoch} test_accuracy={test_accuracy:.4f} "
          f"host_s_per_epoch={host_seconds / max(epochs_run, 1):.1f} "
          f"host_cpu_s_per_epoch={host_cpu_seconds / max(epochs_run, 1):.1f} device_ms_per_step={device_ms:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
