"""Where one training step goes: ``python -m tpusim.step_report --model seeds --batch-size 200``.

Compiles the training step of a model by name (the trainer's models and options, ``python -m
tpusim.train --help``), runs it once on one core of the simulated TPU with the first Fashion-MNIST batch,
runs the same step on the CPU through XLA, and prints one line:

    step model=seeds framework=flax config=v2 batch=200 instruction_words=... hbm_bytes=...
    cycles=... device_ms=... mxu_util_pct=... vpu_util_pct=... stall_pct=... mac_padding_pct=...
    host_s=... host_cycles_per_s=... loss=... cpu_loss=... rel_loss_diff=...

hbm_bytes is the program's HBM (parameters, outputs of their own, constants, temporaries); mxu_util_pct
the share of cycles the MXU multiplies (busy cycles / cycles; 100 is the array's limit);
mac_padding_pct the MXU MACs spent on tile padding; host_s the wall time of the step's execution alone
(compilation excluded).
"""

from __future__ import annotations

import sys
import time

import jax
import numpy as np

from . import bridge, data
from .train import build_model, parse_args


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    (x_train, y_train), _ = data.load_fashion_mnist(args.data_dir)
    x, y = x_train[:args.batch_size], y_train[:args.batch_size]
    model = build_model(args, total_steps=1)
    state = model.initial_state(x)
    model.set_state(state)
    executable = model.train_step.compile(model.params, model.opt_state, x, y).executable

    start = time.perf_counter()
    _, _, loss, _ = model.train_step(model.params, model.opt_state, x, y)
    loss = float(loss)
    host_seconds = time.perf_counter() - start
    counters = model.train_step.last_counters
    cpu_loss = float(jax.jit(model.recipe.train_step())(*state, x, y)[2])

    cycles = max(counters["cycles"], 1)
    padding = 100.0 * (1.0 - executable.logical_macs / executable.mxu_macs) if executable.mxu_macs else 0.0
    print(f"step model={args.model} framework={args.framework} config={args.config} batch={args.batch_size} "
          f"instruction_words={executable.instruction_words} hbm_bytes={executable.hbm_bytes} "
          f"cycles={counters['cycles']} device_ms={counters['cycles'] / bridge.CLOCK_HZ * 1e3:.3f} "
          f"mxu_util_pct={100.0 * counters['mxu_busy_cycles'] / cycles:.1f} "
          f"vpu_util_pct={100.0 * counters['vpu_busy_cycles'] / cycles:.1f} "
          f"stall_pct={100.0 * counters['stall_cycles'] / cycles:.1f} mac_padding_pct={padding:.1f} "
          f"host_s={host_seconds:.1f} host_cycles_per_s={counters['cycles'] / host_seconds:.0f} "
          f"loss={loss:.6f} cpu_loss={cpu_loss:.6f} rel_loss_diff={abs(loss - cpu_loss) / abs(cpu_loss):.2e}")
    return 0 if np.isfinite(loss) else 1


if __name__ == "__main__":
    sys.exit(main())
