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

Several devices: a function that calls ``jax.shard_map`` over a mesh (``tpusim.make_mesh``, every axis
manual) runs on as many devices as the mesh has, as on a TPU slice. The module JAX lowers is the global
view; the runtime makes it the program every device runs and cuts each global argument into the devices'
parts by its ``in_specs`` (``_tpusim.ShardedExecutable``). Results come back as global ``tpusim.Array``
values whose parts stay on their devices (``device_values()`` reads every device's part). ``tpusim.pmap``
maps a function over the leading axis of its arguments the same way.

    mesh = tpusim.make_mesh((2,), ("batch",))
    step = tpusim.jit(jax.shard_map(body, mesh=mesh, in_specs=(P(), P("batch")), out_specs=P()))
"""

from __future__ import annotations

import contextlib

import dataclasses
import threading
from typing import Any, Callable, Sequence

import jax
import numpy as np
from jax.sharding import AbstractMesh, PartitionSpec

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
    (``is_deleted()``), as a donated JAX array. The result of a function over several devices is a global
    array held as one part per device (``buffer`` is then a ``_tpusim.ShardedBuffer``); ``np.asarray``
    puts the parts together, reading each block from the first device that holds it.
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

    @property
    def is_sharded(self) -> bool:
        """True for a global array held as parts on several devices."""
        return isinstance(self.buffer, _tpusim.ShardedBuffer)

    def device_values(self) -> list[np.ndarray]:
        """Every device's part, in device order (one value for an array on one device); the devices that
        hold the same block of a global array (all of them for a replicated one) each give theirs."""
        return self.buffer.part_values() if self.is_sharded else [self.buffer.to_numpy()]

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
    executable: _tpusim.Executable | _tpusim.ShardedExecutable
    hlo_text: str
    out_tree: Any

    @property
    def sharded(self) -> bool:
        return isinstance(self.executable, _tpusim.ShardedExecutable)


def is_global_view(hlo_text: str) -> bool:
    """True for a module JAX lowered from a shard_map or pmap (Shardy's custom calls cut its arguments):
    it runs on the devices of its mesh."""
    return "xla.sdy.GlobalToLocalShape" in hlo_text


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str]) -> AbstractMesh:
    """A mesh of tpusim devices for ``jax.shard_map``, as ``jax.make_mesh`` makes one of JAX's devices:
    the function runs on devices 0 .. prod(axis_shapes)-1 of the client, device numbers in row-major
    order of the mesh coordinates (the first axis major)."""
    if len(axis_shapes) != len(axis_names):
        raise ValueError(f"{len(axis_shapes)} axis sizes for {len(axis_names)} axis names")
    return AbstractMesh(tuple(int(n) for n in axis_shapes), tuple(axis_names))


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
            compile = self.client.compile_sharded if is_global_view(hlo_text) else self.client.compile
            compiled = _Compiled(compile(hlo_text), hlo_text, out_tree)
            self._compiled[key] = compiled
        return compiled

    def _to_buffer(self, leaf: Any) -> _tpusim.Buffer:
        if isinstance(leaf, Array) and leaf.client is self.client:
            if not leaf.is_sharded:
                return leaf.buffer
            first = leaf.buffer.parts[0]
            if leaf.buffer.is_replicated and first.device.id == 0:
                return first  # device 0's copy of a replicated array: nothing moves
        return self.client.buffer_from_numpy(_host_value(leaf))

    def _to_sharded(self, leaf: Any, layout: dict, executable: _tpusim.ShardedExecutable) -> _tpusim.ShardedBuffer:
        """A global argument as the executable's devices need it: an array already cut that way stays where
        it is; anything else is cut on the host and copied to the devices."""
        if isinstance(leaf, Array) and leaf.client is self.client and leaf.is_sharded:
            buffer = leaf.buffer
            if buffer.layout == layout and [part.device.id for part in buffer.parts] == executable.devices:
                return buffer
        value = np.asarray(leaf) if isinstance(leaf, Array) else _host_value(leaf)
        return self.client.buffer_from_global(value, layout, executable.devices)

    def __call__(self, *args):
        leaves, in_tree = jax.tree_util.tree_flatten(args)
        compiled = self._compiled_for(leaves, in_tree)
        self.last_hlo_text = compiled.hlo_text
        if compiled.sharded:
            return self._call_sharded(compiled, leaves)
        buffers = [self._to_buffer(leaf) for leaf in leaves]
        if self.profile_next_call:
            self.profile_next_call = False
            outputs, counters, self.last_profile = compiled.executable.execute(buffers, profile=True)
        else:
            outputs, counters = compiled.executable.execute(buffers)
        self.last_counters = counters
        return jax.tree_util.tree_unflatten(compiled.out_tree, [Array(b, self.client) for b in outputs])

    def _call_sharded(self, compiled: _Compiled, leaves):
        """One call over the devices of the function's mesh: last_counters["cycles"] is the slowest
        device's, last_counters["devices"] every device's counters."""
        if self.profile_next_call:
            self.profile_next_call = False
            raise NotImplementedError(f"{self.name} runs on {compiled.executable.num_devices} devices: the issue "
                                      "trace profiles a function on one device")
        executable = compiled.executable
        buffers = [self._to_sharded(leaf, layout, executable)
                   for leaf, layout in zip(leaves, executable.parameter_layouts)]
        outputs, self.last_counters = executable.execute(buffers)
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


def pmap(fun: Callable | None = None, axis_name: str | None = None, *, in_axes: int | None | Sequence = 0,
         donate_argnums: Sequence[int] = (), backend: str = "model", config: str = "tiny", dot_passes: int = 0,
         name: str | None = None, client: _tpusim.Client | None = None, precision: str | None = None) -> Function:
    """``jax.pmap`` on the simulated TPU's devices: ``fun`` runs once per device on its slice of the
    leading axis of every mapped argument (``in_axes``: 0, or None for an argument every device gets
    whole; one per argument or one for all), collectives over ``axis_name`` among them, and the results
    are stacked along a new leading axis. It runs on as many devices as the mapped axis is long (devices
    0 .. n-1 of the client). Lowered as a ``jax.shard_map`` over a one-axis mesh; other arguments as
    ``tpusim.jit``."""
    if fun is None:
        return lambda f: pmap(f, axis_name, in_axes=in_axes, donate_argnums=donate_argnums, backend=backend,
                              config=config, dot_passes=dot_passes, name=name, client=client, precision=precision)
    axis = axis_name or "i"

    def global_view(*args):
        axes = tuple(in_axes) if isinstance(in_axes, (list, tuple)) else (in_axes,) * len(args)
        if len(axes) != len(args):
            raise ValueError(f"pmap: in_axes has {len(axes)} entries for {len(args)} arguments")
        if any(a not in (0, None) for a in axes):
            raise ValueError(f"pmap: in_axes {in_axes}: only 0 and None are supported")
        mapped = [leaf for arg, a in zip(args, axes) if a == 0 for leaf in jax.tree_util.tree_leaves(arg)]
        if not mapped:
            raise ValueError("pmap: no argument is mapped (in_axes are all None)")
        devices = mapped[0].shape[0]
        if any(leaf.ndim == 0 or leaf.shape[0] != devices for leaf in mapped):
            raise ValueError("pmap: the mapped arguments' leading axes differ: "
                             + ", ".join(str(leaf.shape) for leaf in mapped))

        def body(*parts):
            local = [jax.tree_util.tree_map(lambda v: v[0], part) if a == 0 else part for part, a in zip(parts, axes)]
            return jax.tree_util.tree_map(lambda v: jax.numpy.expand_dims(v, 0), fun(*local))

        specs = tuple(PartitionSpec(axis) if a == 0 else PartitionSpec() for a in axes)
        mesh = make_mesh((devices,), (axis,))
        return jax.shard_map(body, mesh=mesh, in_specs=specs, out_specs=PartitionSpec(axis), check_vma=False)(*args)

    return Function(global_view, donate_argnums, client or get_client(backend, config, dot_passes),
                    name or getattr(fun, "__name__", "pmap"), precision)
