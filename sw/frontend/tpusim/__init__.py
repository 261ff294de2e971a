"""tpusim's Python front end: the simulated TPU from JAX.

- ``tpusim.jit``: a function written for ``jax.jit`` compiled by the project's compiler and run on the
  simulated chip (``backend="model"``: the fast reference model; ``"rtl"``: the verilated chip).
- ``tpusim.pmap`` / ``tpusim.jit`` of a ``jax.shard_map`` over ``tpusim.make_mesh(...)``: one program on
  several devices, global arrays cut over them, collectives (psum, pmean) between them.
- ``tpusim.Model``: Keras-style ``fit``/``evaluate`` of a Flax module with an optax optimizer;
  ``steps_per_execution`` runs that many steps per host call in a device loop fed through the infeed.
- ``tpusim.feeds``: ``infeed``/``outfeed`` inside a jitted function (the client's infeed and outfeed queues).
- ``tpusim.data``: Fashion-MNIST (IDX files), ``tpusim.checkpoint``: exact save and resume.
- Runtime errors arrive as exceptions named after their code (``ResourceExhaustedError``,
  ``NotFoundError``, ...), all subclasses of ``TpuError``, carrying the runtime's message.
"""

from _tpusim import (AbortedError, Client, DeadlineExceededError, FailedPreconditionError, InternalError,
                     InvalidArgumentError, NotFoundError, OutOfRangeError, ResourceExhaustedError, TpuError,
                     UnimplementedError)
from _tpusim import TypeError as TpuTypeError
from _tpusim import ValueError as TpuValueError

from . import checkpoint, data, feeds, models
from .bridge import CLOCK_HZ, Array, Function, device_get, device_put, get_client, jit, make_mesh, pmap
from .training import Model
