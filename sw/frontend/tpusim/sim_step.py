"""One training step of a JAX model on the verilated chip, with a waveform (what ``make sim`` runs).

The Flax MLP's Adam training step on one Fashion-MNIST batch is lowered by JAX, compiled, and run on the
rtl backend with an FST trace; the same step then runs on the reference model (its outputs must be
byte-identical) and on the CPU through XLA (the loss must agree within 1e-3 relative: the dots run at
JAX's DEFAULT precision, one bf16 MXU pass, as on a TPU).
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import optax

import _tpusim

from . import bridge, data, models
from .training import FlaxRecipe


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpusim.sim_step", description=__doc__)
    parser.add_argument("--config", default="tiny")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--trace", default="", help="FST file to write (empty: no waveform)")
    parser.add_argument("--trace-start", type=int, default=0, help="first cycle in the waveform")
    parser.add_argument("--trace-stop", type=int, default=0, help="last cycle in the waveform (0: the end)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    recipe = FlaxRecipe(models.MLP(), optax.adam(1e-3))
    (x, y), _ = data.load_fashion_mnist()
    x, y = x[:args.batch_size], y[:args.batch_size]
    state = recipe.init(0, x)
    train_step = recipe.train_step()

    rtl = _tpusim.Client("rtl", args.config, trace_file=args.trace, trace_start_cycle=args.trace_start,
                         trace_stop_cycle=args.trace_stop)
    step = bridge.jit(train_step, donate_argnums=(0, 1), client=rtl, name="mlp_train_step")
    compiled = step.compile(*state, x, y)
    start = time.perf_counter()
    rtl_out = bridge.device_get(step(*bridge.device_put(state, rtl), x, y))
    host_seconds = time.perf_counter() - start
    counters = step.last_counters

    model_step = bridge.jit(train_step, donate_argnums=(0, 1), backend="model", config=args.config)
    model_out = bridge.device_get(model_step(*bridge.device_put(state, model_step.client), x, y))
    identical = all(a.tobytes() == b.tobytes()
                    for a, b in zip(jax.tree_util.tree_leaves(rtl_out), jax.tree_util.tree_leaves(model_out)))
    cpu_loss = float(jax.jit(train_step)(*state, x, y)[2])
    loss = float(rtl_out[2])

    cycles = counters["cycles"]
    print(f"sim workload=jax_mlp_adam_train_step config={args.config} batch={args.batch_size} "
          f"instruction_words={compiled.executable.instruction_words}")
    for key in ("cycles", "mxu_busy_cycles", "vpu_busy_cycles", "instructions", "dma_lines", "stall_cycles"):
        print(f"{key}: {counters[key]}")
    print(f"mxu_utilization_pct: {100.0 * counters['mxu_busy_cycles'] / max(cycles, 1):.2f}")
    print(f"host_seconds: {host_seconds:.1f}  host_cycles_per_s: {cycles / host_seconds:.0f}")
    print(f"loss: {loss:.6f}  cpu_loss: {cpu_loss:.6f}  rel_diff: {abs(loss - cpu_loss) / abs(cpu_loss):.2e}")
    print(f"model_identical: {int(identical)}")
    return 0 if identical and abs(loss - cpu_loss) <= 1e-3 * abs(cpu_loss) else 2


if __name__ == "__main__":
    sys.exit(main())
