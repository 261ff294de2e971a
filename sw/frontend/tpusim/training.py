"""Keras-style training on the simulated TPU: ``Model(...).fit(...)`` and ``evaluate(...)``.

    model = tpusim.Model(tpusim.models.MLP(), optax.adam(1e-3), backend="model", config="v2")
    model.fit(x_train, y_train, epochs=5, batch_size=128, validation_data=(x_test, y_test))

The training step (forward, sparse categorical cross-entropy, gradients, optimizer update, and the batch's
loss and correct-prediction count) is one jitted function that runs on the device through the bridge;
parameters and optimizer state are donated to it, so they stay in device HBM from step to step and only
the batch and two scalars cross the host link. Every epoch prints the line Keras prints
(``300/300 [====...] - 6s 21ms/step - loss: ... - sparse_categorical_accuracy: ...``), with the simulated
device time per step (device cycles at the chip's clock) next to the host's.

Data-parallel training (``Model(..., devices=N)``, TPUStrategy's way): the step is a ``jax.shard_map`` over
N devices; each device gets global_batch / N examples of every batch, its loss is the sum of its examples'
losses over the global batch size (``compute_average_loss``), and the gradients are summed over the
devices (all-reduce) inside the step before the optimizer update, so that every device holds the same
parameters after every step.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import sys
import threading
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec

from . import bridge, checkpoint, data, feeds


def sparse_categorical_crossentropy(logits, labels):
    """Per-example loss and the labels' one-hot rows (one-hot rather than a gather: the same values)."""
    onehot = jax.nn.one_hot(labels, logits.shape[-1], dtype=logits.dtype)
    return -jnp.sum(onehot * jax.nn.log_softmax(logits), axis=-1), onehot


def correct_predictions(logits, onehot):
    """1.0 where the label's logit is the largest (sparse categorical accuracy), else 0.0."""
    label_logit = jnp.sum(logits * onehot, axis=-1)
    return (label_logit >= jnp.max(logits, axis=-1)).astype(jnp.float32)


DATA_AXIS = "replica"  # the mesh axis of data-parallel training


def average_loss(losses, replicas: int):
    """The loss a replica contributes: its examples' losses summed over the global batch size
    (tf.nn.compute_average_loss), so that the sum over the replicas is the global batch's mean."""
    if replicas == 1:
        return jnp.mean(losses)
    return jnp.sum(losses) / (losses.shape[0] * replicas)


def all_reduce_sum(tree, replicas: int):
    """Every leaf summed over the replicas (one all-reduce per leaf); the tree itself with one replica."""
    if replicas == 1:
        return tree
    return jax.tree_util.tree_map(lambda leaf: lax.psum(leaf, DATA_AXIS), tree)


def make_train_step(module, optimizer, replicas: int = 1):
    """(params, opt_state, x, labels) -> (params, opt_state, mean loss, correct count). With replicas
    above 1 this is one replica's step inside ``data_parallel``: x and labels are its part of the batch,
    the loss, gradients and count are summed over the replicas."""
    import optax

    def train_step(params, opt_state, x, labels):
        def loss_fn(p):
            logits = module.apply(p, x)
            losses, onehot = sparse_categorical_crossentropy(logits, labels)
            return average_loss(losses, replicas), (logits, onehot)

        (loss, (logits, onehot)), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        grads, loss, correct = all_reduce_sum((grads, loss, jnp.sum(correct_predictions(logits, onehot))), replicas)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return params, opt_state, loss, correct

    return train_step


def data_parallel(train_step, replicas: int):
    """The global step of ``replicas`` devices: ``train_step`` (made for that many replicas) runs on every
    device of a one-axis mesh, parameters and optimizer state replicated, the batch cut along its first
    dimension; the results are replicated (every device computed the same)."""
    mesh = bridge.make_mesh((replicas,), (DATA_AXIS,))
    batch, whole = PartitionSpec(DATA_AXIS), PartitionSpec()
    return jax.shard_map(train_step, mesh=mesh, in_specs=(whole, whole, batch, batch), out_specs=whole,
                         check_vma=False)


def make_train_loop(train_step, steps: int, batch_shapes):
    """(params, opt_state) -> (params, opt_state): ``steps`` training steps in one device loop
    (steps_per_execution). Each step takes its batch (x, labels) from the infeed and sends its loss and
    correct count to the outfeed, so the host feeds batches and reads metrics while the device runs."""
    def train_loop(params, opt_state):
        def body(_, state):
            params, opt_state = state
            x, labels = feeds.infeed(batch_shapes)
            params, opt_state, loss, correct = train_step(params, opt_state, x, labels)
            feeds.outfeed(loss, correct)
            return params, opt_state

        return jax.lax.fori_loop(0, steps, body, (params, opt_state))

    return train_loop


def make_eval_step(apply):
    """(params, x, labels, weights) -> (weighted loss sum, weighted correct count); weight 0 pads a batch.
    ``apply(params, x)`` gives the logits (a Flax module's ``apply``, or a Keras model's stateless call)."""
    def eval_step(params, x, labels, weights):
        logits = apply(params, x)
        losses, onehot = sparse_categorical_crossentropy(logits, labels)
        return jnp.sum(losses * weights), jnp.sum(correct_predictions(logits, onehot) * weights)

    return eval_step


class FlaxRecipe:
    """How a Flax module and an optax optimizer are initialised, trained and evaluated: the functions
    ``Model`` compiles for the device. Other frameworks provide the same three (tpusim.keras_bridge)."""

    def __init__(self, module, optimizer):
        self.module = module
        self.optimizer = optimizer

    def init(self, seed: int, sample_x):
        """Host-side initial (params, opt_state) for inputs shaped like ``sample_x``."""
        params = self.module.init(jax.random.PRNGKey(seed), jnp.asarray(sample_x))
        return jax.device_get((params, self.optimizer.init(params)))

    def train_step(self, replicas: int = 1):
        """The training step; with replicas above 1, one replica's (see make_train_step)."""
        return make_train_step(self.module, self.optimizer, replicas)

    def eval_step(self):
        return make_eval_step(self.module.apply)


@dataclasses.dataclass
class Position:
    """Where training stands: the next step to run. Saved in checkpoints."""
    epoch: int = 0
    step_in_epoch: int = 0
    global_step: int = 0
    # Sums over the current epoch so far (for the epoch line after a resume).
    epoch_loss_sum: float = 0.0
    epoch_correct: float = 0.0
    epoch_examples: int = 0
    epoch_device_cycles: int = 0
    epoch_host_seconds: float = 0.0


def _format_duration_per_step(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.0f}s/step"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/step"
    return f"{seconds * 1e6:.0f}us/step"


def progress_bar(done: int, total: int, width: int = 30) -> str:
    """Keras's bar: '[=====>........]' while running, all '=' when done."""
    if done >= total:
        return "[" + "=" * width + "]"
    filled = int(width * done / total)
    return "[" + "=" * max(filled - 1, 0) + (">" if filled else "") + "." * (width - filled) + "]"


class StepInterrupt:
    """Ctrl-C during training, as on Cloud TPUs: the first SIGINT lets the running execution finish (one
    step, or the loop of steps_per_execution steps: its donated parameters must come back) and stops
    training after it; a second one interrupts at once. Installed only in the main thread; elsewhere
    Ctrl-C keeps Python's default behaviour."""

    def __init__(self, out, steps_per_execution: int = 1):
        self.out = out
        self.requested = False
        self.what = ("the current step" if steps_per_execution == 1
                     else f"the current loop of up to {steps_per_execution} steps")

    def _handler(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print(f"\nInterrupted: finishing {self.what}, then stopping (Ctrl-C again stops at once)",
              file=self.out, flush=True)

    @contextlib.contextmanager
    def installed(self):
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGINT, self._handler)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)


class Model:
    """A Flax module and an optax optimizer (or another framework's ``recipe``) trained on the simulated TPU.

    backend, config, dot_passes, precision: as ``tpusim.jit``. seed: initial parameters and the data order.
    steps_per_execution: as Keras's ``compile`` argument: training steps per host call. Above 1 a call
    runs a device loop of that many steps (make_train_loop) fed through the infeed, its metrics coming
    back through the outfeed; log lines, checkpoints and Ctrl-C happen only between calls.
    devices: data-parallel training on that many devices of the client (see the module's text); the
    batch size must be a multiple of it. ``replica_states()`` reads every device's parameters.
    """

    def __init__(self, module=None, optimizer=None, *, recipe=None, backend: str = "model", config: str = "tiny",
                 dot_passes: int = 0, seed: int = 0, out=None, precision: str | None = None,
                 steps_per_execution: int = 1, devices: int = 1):
        if steps_per_execution < 1:
            raise ValueError(f"steps_per_execution must be at least 1, got {steps_per_execution}")
        if devices < 1:
            raise ValueError(f"devices must be at least 1, got {devices}")
        if devices > 1 and steps_per_execution > 1:
            raise ValueError(f"devices={devices} trains one step per call: steps_per_execution must be 1, "
                             f"got {steps_per_execution}")
        self.recipe = recipe or FlaxRecipe(module, optimizer)
        self.seed = seed
        self.steps_per_execution = steps_per_execution
        self.precision = precision
        self._train_loops: dict[tuple, bridge.Function] = {}  # (steps, batch shapes) -> the loop
        self.client = bridge.get_client(backend, config, dot_passes)
        if devices > len(self.client.devices):
            raise ValueError(f"devices={devices}: the {config} client has {len(self.client.devices)} devices")
        self.devices = devices
        step = self.recipe.train_step() if devices == 1 else data_parallel(self.recipe.train_step(devices), devices)
        self.train_step = bridge.Function(step, (0, 1), self.client, "train_step", precision)
        self.eval_step = bridge.Function(self.recipe.eval_step(), (), self.client, "eval_step", precision)
        self.params = None
        self.opt_state = None
        self.position = Position()
        self.step_losses: list[float] = []  # every training step's loss, in order (this process)
        self.out = out or sys.stdout
        self.interrupted = False  # the last fit stopped on Ctrl-C
        self.profile = None  # the _tpusim.Profile of fit's profile_step
        # Device cycles of the last call (one step, or a loop of steps_per_execution steps) and its steps.
        self.last_execution_cycles = 0
        self.last_execution_steps = 0
        self._profile_request: tuple[int | None, str | None] = (None, None)

    # --- state -----------------------------------------------------------------------------------

    def initial_state(self, sample_x):
        """Host-side initial (params, opt_state) for inputs shaped like ``sample_x``."""
        return self.recipe.init(self.seed, sample_x)

    def init(self, sample_x) -> None:
        """Initialises parameters and optimizer state and copies them to device HBM."""
        self.set_state(self.initial_state(sample_x))

    def set_state(self, state) -> None:
        self.params, self.opt_state = bridge.device_put(state, self.client)

    def state(self):
        """(params, opt_state) as NumPy arrays (with several devices: device 0's)."""
        return bridge.device_get((self.params, self.opt_state))

    def replica_states(self) -> list:
        """Every device's (params, opt_state) as NumPy arrays, in device order (one with one device)."""
        leaves, tree = jax.tree_util.tree_flatten((self.params, self.opt_state))
        values = [leaf.device_values() if isinstance(leaf, bridge.Array) else [np.asarray(leaf)] for leaf in leaves]
        count = max((len(v) for v in values), default=1)
        return [jax.tree_util.tree_unflatten(tree, [v[d] if len(v) > 1 else v[0] for v in values])
                for d in range(count)]

    def save(self, path: str) -> None:
        checkpoint.save(path, self.state(), {"seed": self.seed, "position": dataclasses.asdict(self.position)})

    def restore(self, path: str, sample_x) -> None:
        state, meta = checkpoint.restore(path, self.initial_state(sample_x))
        if meta["seed"] != self.seed:
            raise ValueError(f"{path}: saved with seed {meta['seed']}, this model has seed {self.seed}")
        self.set_state(state)
        self.position = Position(**meta["position"])

    # --- training --------------------------------------------------------------------------------

    def fit(self, x, y, *, epochs: int = 1, batch_size: int = 32, validation_data=None, checkpoint_path=None,
            stop_after_steps: int | None = None, verbose: int = 1, profile_step: int | None = None,
            profile_dir: str | None = None) -> dict[str, list[float]]:
        """Trains until ``epochs`` epochs are done (or ``stop_after_steps`` steps, counted from the start
        of training, including steps before a resume). With ``checkpoint_path``, training resumes from it
        when it exists and saves to it after every epoch and when it stops early. Ctrl-C stops after the
        running step, saves the checkpoint and sets ``interrupted`` (StepInterrupt). With ``profile_step``
        (a global step number, counted from 0), that step runs with the chip's issue trace on: its op
        profile and findings are printed and kept in ``profile``, and with ``profile_dir`` its trace
        (step<N>.trace.json, Perfetto) and report (step<N>.html) are written there. Returns the history of
        the epochs run here: loss, sparse_categorical_accuracy (and val_... with validation data)."""
        x = np.asarray(x, np.float32)
        y = np.asarray(y, np.int32)
        steps = data.batch_count(len(x), batch_size)
        if batch_size % self.devices:
            raise ValueError(f"batch_size {batch_size} does not split over {self.devices} devices: each replica "
                             f"gets batch_size / devices examples")
        if steps == 0:
            raise ValueError(f"{len(x)} examples make no batch of {batch_size}")
        if self.params is None:
            if checkpoint_path and os.path.exists(checkpoint_path):
                self.restore(checkpoint_path, x[:batch_size])
            else:
                self.init(x[:batch_size])
        history: dict[str, list[float]] = {}
        self.interrupted = False
        self._profile_request = (profile_step, profile_dir)
        if profile_dir:
            os.makedirs(profile_dir, exist_ok=True)  # before training, not after a long run
        if profile_step is not None and self.steps_per_execution > 1:
            raise ValueError("profile_step profiles one step: use steps_per_execution=1")
        if profile_step is not None and self.devices > 1:
            raise ValueError(f"profile_step profiles a step on one device, this model trains on {self.devices}")
        with StepInterrupt(self.out, self.steps_per_execution).installed() as interrupt:
            self._epochs(x, y, steps, epochs, batch_size, validation_data, checkpoint_path, stop_after_steps,
                         verbose, history, interrupt)
        return history

    def _report_profile(self, step: int) -> None:
        """The profiled step's op profile and findings, and its trace and report files."""
        profile, hlo_text = self.train_step.last_profile, self.train_step.last_hlo_text
        self.profile = profile
        print(f"\nProfile of step {step} ({profile.cycles} cycles):", file=self.out)
        print(profile.op_table(10), end="", file=self.out)
        for check, text in profile.findings(hlo_text):
            print(f"  [{check}] {text}", file=self.out)
        _, profile_dir = self._profile_request
        if profile_dir:
            trace = os.path.join(profile_dir, f"step{step}.trace.json")
            report = os.path.join(profile_dir, f"step{step}.html")
            profile.write_trace(trace)
            profile.write_report(report, hlo_text, f"training step {step}",
                                 f"{self.client.backend} backend, {profile.cycles} cycles")
            print(f"trace: {trace}\nreport: {report}", file=self.out)
        self.out.flush()

    def _epochs(self, x, y, steps, epochs, batch_size, validation_data, checkpoint_path, stop_after_steps, verbose,
                history, interrupt) -> None:
        live = verbose and getattr(self.out, "isatty", lambda: False)()
        while self.position.epoch < epochs:
            p = self.position
            if verbose:
                print(f"Epoch {p.epoch + 1}/{epochs}", file=self.out, flush=True)
            order = data.epoch_order(self.seed, p.epoch, len(x))
            start = time.perf_counter() - p.epoch_host_seconds
            last_draw = 0.0
            while p.step_in_epoch < steps:
                count = min(self.steps_per_execution, steps - p.step_in_epoch)
                if stop_after_steps is not None:
                    count = max(min(count, stop_after_steps - p.global_step), 1)
                first = p.step_in_epoch * batch_size
                batches = [order[first + k * batch_size:first + (k + 1) * batch_size] for k in range(count)]
                if self.steps_per_execution == 1:
                    metrics = [self._train_one_step(x[batches[0]], y[batches[0]], p.global_step)]
                else:
                    metrics = self._train_loop(x, y, batches)
                for loss, correct in metrics:
                    self.step_losses.append(loss)
                    p.epoch_loss_sum += loss
                    p.epoch_correct += correct
                p.epoch_examples += batch_size * count
                p.epoch_device_cycles += self.last_execution_cycles
                p.step_in_epoch += count
                p.global_step += count
                p.epoch_host_seconds = time.perf_counter() - start
                if live and (time.perf_counter() - last_draw > 0.1 or p.step_in_epoch == steps):
                    last_draw = time.perf_counter()
                    self.out.write("\r" + self._line(steps, live=True))
                    self.out.flush()
                if interrupt.requested or (stop_after_steps is not None and p.global_step >= stop_after_steps):
                    self.interrupted = interrupt.requested
                    if live:
                        self.out.write("\n")
                    if checkpoint_path:
                        self.save(checkpoint_path)
                    return
            metrics = self._epoch_metrics(steps)
            if validation_data is not None:
                val_loss, val_accuracy = self.evaluate(*validation_data, batch_size=batch_size, verbose=0)
                metrics["val_loss"] = val_loss
                metrics["val_sparse_categorical_accuracy"] = val_accuracy
            for key, value in metrics.items():
                history.setdefault(key, []).append(value)
            if verbose:
                self.out.write(("\r" if live else "") + self._line(steps, live=False, metrics=metrics) + "\n")
                self.out.flush()
            self.position = Position(epoch=p.epoch + 1, global_step=p.global_step)
            if checkpoint_path:
                self.save(checkpoint_path)

    def _train_one_step(self, xb, yb, global_step: int) -> tuple[float, float]:
        """One training step per call, the batch passed as arguments: (loss, correct count)."""
        profiled = self._profile_request[0] == global_step
        self.train_step.profile_next_call = profiled
        self.params, self.opt_state, loss, correct = self.train_step(self.params, self.opt_state, xb, yb)
        if profiled:
            self._report_profile(global_step)
        self.last_execution_cycles, self.last_execution_steps = self.train_step.last_counters["cycles"], 1
        return float(loss), float(correct)

    def _train_loop(self, x, y, batches) -> list[tuple[float, float]]:
        """len(batches) steps in one device loop: the batches go to the infeed queue, the loop runs, each
        step's (loss, correct count) comes back from the outfeed queue."""
        batch_size = len(batches[0])
        shapes = (jax.ShapeDtypeStruct((batch_size,) + x.shape[1:], x.dtype),
                  jax.ShapeDtypeStruct((batch_size,) + y.shape[1:], y.dtype))
        key = (len(batches), shapes[0].shape, shapes[1].shape)
        loop = self._train_loops.get(key)
        if loop is None:
            loop = bridge.Function(make_train_loop(self.recipe.train_step(), len(batches), shapes), (0, 1),
                                   self.client, f"train_loop_{len(batches)}", self.precision)
            self._train_loops[key] = loop
        for batch in batches:
            self.client.transfer_to_infeed([x[batch], y[batch]])
        self.params, self.opt_state = loop(self.params, self.opt_state)
        self.last_execution_cycles, self.last_execution_steps = loop.last_counters["cycles"], len(batches)
        return [tuple(float(v) for v in self.client.transfer_from_outfeed()) for _ in batches]

    def _epoch_metrics(self, steps_done: int) -> dict[str, float]:
        p = self.position
        return {"loss": p.epoch_loss_sum / max(p.step_in_epoch, 1),
                "sparse_categorical_accuracy": p.epoch_correct / max(p.epoch_examples, 1)}

    def device_seconds_per_step(self) -> float:
        p = self.position
        return p.epoch_device_cycles / bridge.CLOCK_HZ / max(p.step_in_epoch, 1)

    def _line(self, steps: int, live: bool, metrics: dict[str, float] | None = None) -> str:
        p = self.position
        metrics = metrics or self._epoch_metrics(steps)
        host_per_step = p.epoch_host_seconds / max(p.step_in_epoch, 1)
        if live and p.step_in_epoch < steps:
            timing = f"ETA: {host_per_step * (steps - p.step_in_epoch):.0f}s"
        else:
            timing = f"{p.epoch_host_seconds:.0f}s {_format_duration_per_step(host_per_step)}"
        timing += f" - device {_format_duration_per_step(self.device_seconds_per_step())}"
        values = " - ".join(f"{name}: {value:.4f}" for name, value in metrics.items())
        width = len(str(steps))
        return f"{p.step_in_epoch:>{width}}/{steps} {progress_bar(p.step_in_epoch, steps)} - {timing} - {values}"

    def evaluate(self, x, y, *, batch_size: int = 32, verbose: int = 1) -> tuple[float, float]:
        """(loss, sparse categorical accuracy) over every example; the last batch is padded with
        weight-0 examples so that every batch has the compiled shape."""
        x = np.asarray(x, np.float32)
        y = np.asarray(y, np.int32)
        if self.params is None:
            raise ValueError("evaluate before fit or init: the model has no parameters")
        loss_sum = correct = 0.0
        for start in range(0, len(x), batch_size):
            xb, yb = x[start:start + batch_size], y[start:start + batch_size]
            weights = np.ones(batch_size, np.float32)
            if len(xb) < batch_size:
                pad = batch_size - len(xb)
                weights[len(xb):] = 0
                xb = np.concatenate([xb, np.zeros((pad,) + xb.shape[1:], xb.dtype)])
                yb = np.concatenate([yb, np.zeros(pad, yb.dtype)])
            batch_loss, batch_correct = self.eval_step(self.params, xb, yb, weights)
            loss_sum += float(batch_loss)
            correct += float(batch_correct)
        loss, accuracy = loss_sum / len(x), correct / len(x)
        if verbose:
            print(f"loss: {loss:.4f} - sparse_categorical_accuracy: {accuracy:.4f}", file=self.out, flush=True)
        return loss, accuracy
