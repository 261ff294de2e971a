"""Infeed and outfeed inside a jitted function, as a TPU training loop uses them.

    def steps(params):
        def body(i, params):
            x, y = tpusim.infeed((jax.ShapeDtypeStruct((128, 784), jnp.float32),
                                  jax.ShapeDtypeStruct((128,), jnp.int32)))
            params, loss = step(params, x, y)
            tpusim.outfeed(loss)
            return params
        return jax.lax.fori_loop(0, 50, body, params)

``infeed`` lowers to XLA's ``infeed`` (with an ``after-all`` token) and ``outfeed`` to ``outfeed``: the
module the project's compiler receives is what XLA would. The values come from the client's infeed queue
(``Client.transfer_to_infeed``) while the program runs, and go to its outfeed queue
(``Client.transfer_from_outfeed``). Only the simulated TPU runs these functions: JAX's CPU backend has no
host queues for them.
"""

from __future__ import annotations

from typing import Sequence

import jax
from jax._src import core as jax_core
from jax._src import effects
from jax.interpreters import mlir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

INFEED_DTYPES = ("float32", "int32", "bfloat16", "bool")  # the TPU infeed's types


class _FeedEffect(effects.Effect):
    """Infeed and outfeed talk to the host: never removed, duplicated or moved out of a loop."""

    def __str__(self):
        return "TpuFeed"


_feed_effect = _FeedEffect()
for _allowed in (effects.lowerable_effects, effects.control_flow_allowed_effects, effects.remat_allowed_effects):
    _allowed.add_type(_FeedEffect)


def _no_eager(*args, **kwargs):
    raise RuntimeError("tpusim.infeed / tpusim.outfeed run inside a function compiled for the simulated TPU only")


infeed_p = jax_core.Primitive("tpusim_infeed")
infeed_p.multiple_results = True
infeed_p.def_impl(_no_eager)
infeed_p.def_effectful_abstract_eval(
    lambda *, shapes: ([jax_core.ShapedArray(s.shape, s.dtype) for s in shapes], {_feed_effect}))


def _infeed_lowering(ctx, *, shapes):
    token = stablehlo.CreateTokenOp().result  # after-all()
    types = [mlir.aval_to_ir_type(ctx.module_context, aval) for aval in ctx.avals_out]
    op = stablehlo.InfeedOp(types + [stablehlo.TokenType.get()], token, infeed_config=ir.StringAttr.get(""))
    return list(op.results[:-1])


mlir.register_lowering(infeed_p, _infeed_lowering)

outfeed_p = jax_core.Primitive("tpusim_outfeed")
outfeed_p.multiple_results = True
outfeed_p.def_impl(_no_eager)
outfeed_p.def_effectful_abstract_eval(lambda *values: ([], {_feed_effect}))


def _outfeed_lowering(ctx, *values):
    token = stablehlo.CreateTokenOp().result
    stablehlo.OutfeedOp(list(values), token, outfeed_config=ir.StringAttr.get(""))
    return []


mlir.register_lowering(outfeed_p, _outfeed_lowering)


def infeed(shapes: Sequence[jax.ShapeDtypeStruct]) -> list[jax.Array]:
    """The next value of the device's infeed queue: one array per entry of ``shapes``."""
    shapes = tuple(jax.ShapeDtypeStruct(tuple(s.shape), s.dtype) for s in shapes)
    for s in shapes:
        if str(s.dtype) not in INFEED_DTYPES:
            raise TypeError(f"DataType {s.dtype} is not a supported TPU infeed type.")
    return infeed_p.bind(shapes=shapes)


def outfeed(*values) -> None:
    """Sends ``values`` (arrays) to the device's outfeed queue."""
    outfeed_p.bind(*values)
