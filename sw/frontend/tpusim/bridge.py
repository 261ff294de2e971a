"""The JAX bridge: a function written for ``jax.jit`` runs on the simulated TPU.

    step = tpusim.jit(train_step, donate_argnums=(0, 1), backend="model", config="v2")
    params, opt_state, loss = step(params, opt_state, x, y)

The first call with a given argument structure, shapes and dtypes lowers the function with JAX to the HLO
module XLA would receive (before optimizations), compiles it with the project's compiler and loads it on
the device; later calls with the same signature reuse it. Arguments may be NumPy or JAX arrays (copied to
device HBM) or ``tpusim.Array`` values returned by an earlier call (already in HBM: nothing moves).
Results come back as ``tpusim.Array`` values that stay in HBM until read (``np.asarray``). Donated
arguments (``donate_argnums``) become the module's ``input_output_alias``, so parameters and optimizer
state are updated in place and only the batch crosses the host link.
"""

from __future__ import annotations

import contextlib

import dataclasses
import threading
from typing import Any, Callable, Sequence

import jax
import numpy as np

import _tpusim

CLOCK_HZ = _tpusim.CLOCK_HZ

_clients: dict[tuple, _tpusim.Client] = {}
_clients_lock = threading.Lock()


def get_client(backend: str = "model", config: str = "tiny", dot_passes: int = 0) -> _tpusim.Client:
    """The process's client for (backend, config, dot_passes), created on first use.

    The rtl backend has one verilated chip per process: ask for it with one dot_passes value only.
    """
    key = (backend, config, dot_passes)
    with _clients_lock:
        if key not in _clients:
            _clients[key] = _tpusim.Client(backend, config, dot_passes=dot_passes)
        return _clients[key]


class Array:
    """A value in device HBM, as returned by a ``tpusim.jit`` function.

    ``np.asarray(a)`` copies it to the host. Once donated to a later call it holds no data
    (``is_deleted()``), as a donated JAX array.
    """

    __slots__ = ("buffer", "client")

    def __init__(self, buffer: _tpusim.Buffer, client: _tpusim.Client):
        self.buffer = buffer
        self.client = client

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.buffer.shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.buffer.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def is_deleted(self) -> bool:
        return self.buffer.is_donated

    def __array__(self, dtype=None, copy=None):
        value = self.buffer.to_numpy()
        return value if dtype is None else value.astype(dtype)

    def item(self):
        return np.asarray(self).item()

    def __float__(self):
        return float(self.item())

    def __repr__(self) -> str:
        if self.is_deleted():
            return f"tpusim.Array(<donated>, shape={self.shape}, dtype={self.dtype})"
        return f"tpusim.Array({np.asarray(self)!r})"


def _host_value(leaf: Any) -> np.ndarray:
    """A leaf as a NumPy array of the dtype JAX would give it (Python scalars: float32 / int32)."""
    if isinstance(leaf, bool):
        return np.asarray(leaf, np.bool_)
    if isinstance(leaf, int):
        return np.asarray(leaf, np.int32)
    if isinstance(leaf, float):
        return np.asarray(leaf, np.float32)
    return np.asarray(leaf)


def _signature(leaf: Any) -> tuple[tuple[int, ...], np.dtype]:
    if isinstance(leaf, Array):
        return leaf.shape, leaf.dtype
    value = _host_value(leaf)
    return value.shape, value.dtype


@dataclasses.dataclass
class _Compiled:
    executable: _tpusim.Executable
    hlo_text: str
    out_tree: Any


class Function:
    """A function compiled for the simulated TPU (see ``jit``)."""

    def __init__(self, fun: Callable, donate_argnums: Sequence[int], client: _tpusim.Client, name: str | None,
                 precision: str | None = None):
        self.fun = fun
        self.precision = precision
        self.donate_argnums = tuple(donate_argnums)
        self.client = client
        self.name = name or getattr(fun, "__name__", "function")
        self._compiled: dict[Any, _Compiled] = {}
        # Device counters of the last call (cycles, mxu_busy_cycles, instructions, dma_lines, ...).
        self.last_counters: dict[str, int] = {}
        # Set profile_next_call to profile the next call: its _tpusim.Profile (cycles per HLO operation,
        # trace, report) and the HLO text it ran are then last_profile and last_hlo_text.
        self.profile_next_call = False
        self.last_profile: _tpusim.Profile | None = None
        self.last_hlo_text = ""

    def lower(self, *args) -> tuple[str, Any]:
        """The HLO text JAX lowers the function to for these arguments, and the output tree."""
        return self._lower(*jax.tree_util.tree_flatten(args))

    def _lower(self, leaves, in_tree) -> tuple[str, Any]:
        abstract = [jax.ShapeDtypeStruct(*_signature(leaf)) for leaf in leaves]
        abstract_args = jax.tree_util.tree_unflatten(in_tree, abstract)
        # keep_unused: every flattened argument stays a parameter, in order, so buffers map one to one.
        # The matmul precision becomes the dots' operand_precision, which chooses their MXU passes.
        with jax.default_matmul_precision(self.precision) if self.precision else contextlib.nullcontext():
            lowered = jax.jit(self.fun, donate_argnums=self.donate_argnums, keep_unused=True).lower(*abstract_args)
        return lowered.as_text(dialect="hlo"), lowered.out_tree

    def compile(self, *args) -> _Compiled:
        """The loaded executable for these arguments' structure, shapes and dtypes (compiled once)."""
        return self._compiled_for(*jax.tree_util.tree_flatten(args))

    def _compiled_for(self, leaves, in_tree) -> _Compiled:
        key = (in_tree, tuple(_signature(leaf) for leaf in leaves))
        compiled = self._compiled.get(key)
        if compiled is None:
            hlo_text, out_tree = self._lower(leaves, in_tree)
            compiled = _Compiled(self.client.compile(hlo_text), hlo_text, out_tree)
            self._compiled[key] = compiled
        return compiled

    def _to_buffer(self, leaf: Any) -> _tpusim.Buffer:
        if isinstance(leaf, Array) and leaf.client is self.client:
            return leaf.buffer
        return self.client.buffer_from_numpy(_host_value(leaf))

    def __call__(self, *args):
        leaves, in_tree = jax.tree_util.tree_flatten(args)
        compiled = self._compiled_for(leaves, in_tree)
        buffers = [self._to_buffer(leaf) for leaf in leaves]
        self.last_hlo_text = compiled.hlo_text
        if self.profile_next_call:
            self.profile_next_call = False
            outputs, counters, self.last_profile = compiled.executable.execute(buffers, profile=True)
        else:
            outputs, counters = compiled.executable.execute(buffers)
        self.last_counters = counters
        return jax.tree_util.tree_unflatten(compiled.out_tree, [Array(b, self.client) for b in outputs])


def jit(fun: Callable | None = None, *, donate_argnums: Sequence[int] = (), backend: str = "model",
        config: str = "tiny", dot_passes: int = 0, name: str | None = None, client: _tpusim.Client | None = None,
        precision: str | None = None):
    """Compiles ``fun`` for the simulated TPU, as ``jax.jit`` compiles it for a JAX device.

    backend: "model" (fast reference model) or "rtl" (the verilated chip of this build's configuration).
    config: the hardware configuration (rtl/config/<config>.cfg).
    precision: the matmul precision ``fun`` is lowered at (``jax.default_matmul_precision``: "default",
    "high", "highest"; None: JAX's own default). As on a TPU, a dot's precision chooses its MXU passes:
    DEFAULT one bf16 pass, HIGH three (bf16_3x), HIGHEST six (bf16_6x).
    dot_passes: MXU passes forced on every f32 dot (1, 3 or 6; 0: each dot's precision).
    client: run on this client instead (e.g. one with a waveform trace); backend, config and dot_passes
    are then its own.
    """
    if fun is None:
        return lambda f: jit(f, donate_argnums=donate_argnums, backend=backend, config=config,
                             dot_passes=dot_passes, name=name, client=client, precision=precision)
    return Function(fun, donate_argnums, client or get_client(backend, config, dot_passes), name, precision)


def device_put(tree: Any, client: _tpusim.Client | None = None, *, backend: str = "model", config: str = "tiny",
               dot_passes: int = 0) -> Any:
    """Copies every leaf of ``tree`` to device HBM once, as ``tpusim.Array`` values (on ``client``, or on
    the process's client for backend, config and dot_passes)."""
    client = client or get_client(backend, config, dot_passes)
    return jax.tree_util.tree_map(lambda leaf: Array(client.buffer_from_numpy(_host_value(leaf)), client), tree)


def device_get(tree: Any) -> Any:
    """Every ``tpusim.Array`` leaf of ``tree`` as a NumPy array."""
    return jax.tree_util.tree_map(lambda leaf: np.asarray(leaf), tree)
