"""One training step of a JAX model on the verilated chip, with a waveform (what ``make sim`` runs).

The Flax MLP's Adam training step on one Fashion-MNIST batch is lowered by JAX, compiled, and run on the
rtl backend with an FST trace; the same step then runs on the reference model (its outputs must be
byte-identical) and on the CPU through XLA (the loss must agree within 1e-3 relative: the dots run at
JAX's DEFAULT precision, one bf16 MXU pass, as on a TPU).

With --gtkw, the GTKWave save file for the waveform is written from --gtkw-template (sim/chip.gtkw): it
opens on the program's first cycle, with named markers at the start of the first 26 HLO operations, the
opcode shown as its mnemonic (--opcode-filter, generated from rtl/spec/isa.def) and the issue trace's pc
as the HLO operation it belongs to (a filter written beside the save file from the program's code ranges).
"""

from __future__ import annotations

import argparse
import os
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
    parser.add_argument("--gtkw", default="", help="GTKWave save file to write for the waveform")
    parser.add_argument("--gtkw-template", default="sim/chip.gtkw")
    parser.add_argument("--opcode-filter", default="", help="the opcode translate filter (build/<config>/gen)")
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
    step.profile_next_call = bool(args.gtkw)
    start = time.perf_counter()
    rtl_out = bridge.device_get(step(*bridge.device_put(state, rtl), x, y))
    host_seconds = time.perf_counter() - start
    counters = step.last_counters
    if args.gtkw:
        write_save_file(args, compiled.executable, step.last_profile)

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


def write_save_file(args, executable, profile) -> None:
    """The save file: the template with its filters made absolute, the view on the program's first cycle
    and named markers A..Z at the first operations' starts (FST time: cycle * 1000 ps)."""
    out_dir = os.path.dirname(os.path.abspath(args.gtkw))
    operations = os.path.join(out_dir, "hlo_operations.gtkw_filter")
    ranges = executable.code_ranges
    with open(operations, "w") as f:
        f.write("# The HLO operation of each instruction word (tpu_chip trace_pc_o, hex): written by sim_step.\n")
        for i, (what, begin, _) in enumerate(ranges):
            # An operation owns its words and the SYNC after it; the last one the final HALT too.
            end = ranges[i + 1][1] if i + 1 < len(ranges) else executable.instruction_words
            for pc in range(0 if i == 0 else begin, end):
                f.write(f"{pc:08X} {what.split(' = ')[0]}\n")
    ps = 1000
    start = profile.start_cycle * ps
    markers = [(profile.start_cycle + op["start_cycle"]) * ps for op in profile.ops[:26]]
    markers += [-1] * (26 - len(markers))
    with open(args.gtkw_template) as f:
        lines = f.read().splitlines()
    out = []
    for line in lines:
        if line.startswith("[timestart]"):
            line = f"[timestart] {start}"
        elif line.startswith("*"):
            zoom = line.split()[0]
            line = " ".join([zoom, str(start)] + [str(m) for m in markers])
        elif line.startswith("^1 "):
            line = "^1 " + os.path.abspath(args.opcode_filter)
        elif line.startswith("^2 "):
            line = "^2 " + operations
        out.append(line)
    with open(args.gtkw, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    sys.exit(main())
