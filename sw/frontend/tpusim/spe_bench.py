"""steps_per_execution benchmark: ``python -m tpusim.spe_bench`` (``make bench-steps-per-execution``).

Trains the MLP (784-256-128-10, Adam) for --steps steps of --batch-size Fashion-MNIST images on the
simulated TPU twice from the same initial parameters: with one training step per host call (N=1: the
batch crosses the host link as arguments, the step launches, loss and accuracy come back) and with
--steps-per-execution steps per call (N: a device loop fed through the infeed while it runs, the metrics
returned through the outfeed). Prints, with the device time of the whole run (launches, host-link
transfers and the programs, at the chip's clock) per step:

    spe n=1 device_ms_per_step=A host_s=...
    spe n=50 device_ms_per_step=B host_s=...
    spe weights_identical=1 losses_identical=1 reduction_pct=...

The host link is the runtime's model (docs/architecture.md, "Host link"); host CPU time (Python, the
simulation itself) is not device time.
"""

from __future__ import annotations

import argparse
import io
import sys
import time

import jax
import numpy as np
import optax

from . import bridge, data, models
from .training import Model


def run(n: int, x, y, args) -> tuple[float, list, list, float]:
    """Trains with steps_per_execution=n: (device ms per step, final state leaves, losses, host seconds)."""
    model = Model(models.MLP(), optax.adam(args.learning_rate), backend=args.backend, config=args.config,
                  seed=args.seed, out=io.StringIO(), steps_per_execution=n)
    model.init(x[:args.batch_size])
    start_cycles, start = model.client.device_cycles, time.perf_counter()
    model.fit(x, y, epochs=1, batch_size=args.batch_size, stop_after_steps=args.steps, verbose=0)
    cycles = model.client.device_cycles - start_cycles
    host_seconds = time.perf_counter() - start
    steps = len(model.step_losses)
    if steps != args.steps:
        raise RuntimeError(f"n={n} ran {steps} steps, not {args.steps}")
    leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(model.state())]
    return cycles / bridge.CLOCK_HZ * 1e3 / steps, leaves, model.step_losses, host_seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpusim.spe_bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--steps-per-execution", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--backend", default="model", choices=["model", "rtl"])
    parser.add_argument("--config", default="v2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=data.FASHION_MNIST_DIR)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    (x, y), _ = data.load_fashion_mnist(args.data_dir)
    x, y = x[:args.steps * args.batch_size], y[:args.steps * args.batch_size]
    results = {}
    for n in (1, args.steps_per_execution):
        device_ms, leaves, losses, host_seconds = run(n, x, y, args)
        results[n] = (device_ms, leaves, losses)
        print(f"spe n={n} device_ms_per_step={device_ms:.4f} host_s={host_seconds:.1f}", flush=True)
    (a, leaves_1, losses_1), (b, leaves_n, losses_n) = results[1], results[args.steps_per_execution]
    same_weights = len(leaves_1) == len(leaves_n) and all(np.array_equal(p, q) for p, q in zip(leaves_1, leaves_n))
    print(f"spe weights_identical={int(same_weights)} losses_identical={int(losses_1 == losses_n)} "
          f"reduction_pct={100 * (a - b) / a:.1f}")
    return 0 if same_weights else 1


if __name__ == "__main__":
    sys.exit(main())
