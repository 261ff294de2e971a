"""Programs as users write them in JAX -- an RNN as a scan, dropout, convolution and pooling, cumulative
ops, sorting and top-k, trigonometry, integer arithmetic, indexing, f16 -- run on the device (model
backend, tiny) and compared with XLA on the CPU. What a TPU could run compiles and runs: each case names a
family of operations a framework emits; a refusal fails the test. A transformer block's gradient needs
v2's instruction memory (`tpusim run ... --config=v2` runs it); on tiny it is refused for its size only."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tpusim


CONFIG = "tiny"
rng = np.random.default_rng(0)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def layernorm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b


def attention(q, k, v):
    s = jnp.einsum("bqd,bkd->bqk", q, k) / np.sqrt(q.shape[-1])
    mask = jnp.tril(jnp.ones((q.shape[1], k.shape[1]), bool))
    s = jnp.where(mask, s, -1e9)
    return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, -1), v)


def transformer_loss(params, x, y):
    h = x @ params["w_in"]
    h = layernorm(h + attention(h, h, h), params["g"], params["b"])
    h = jax.nn.gelu(h @ params["w1"]) @ params["w2"] + h
    logits = h.mean(1) @ params["w_out"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))


TPARAMS = {"w_in": r(16, 32) * .1, "g": np.ones(32, np.float32), "b": np.zeros(32, np.float32),
           "w1": r(32, 64) * .1, "w2": r(64, 32) * .1, "w_out": r(32, 10) * .1}


TX, TY = r(4, 8, 16), np.array([1, 3, 5, 7], np.int32)


def rnn_loss(w, xs):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h.sum()
    h, ys = jax.lax.scan(step, jnp.zeros((4, 16), jnp.float32), xs)
    return (h ** 2).sum() + ys.sum()


def dropout(key, x):
    keep = jax.random.bernoulli(key, 0.8, x.shape)
    return jnp.where(keep, x / 0.8, 0)


def conv_pool(x, w):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jax.nn.relu(y)
    return jax.lax.reduce_window(y, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID").mean()


def cumsum_stuff(x):
    return jnp.cumsum(x, axis=1), jnp.cumprod(x[:, :5], axis=1), jnp.argmax(x, 1)


def topk(x):
    return jax.lax.top_k(x, 3)


def misc(x):
    return (jnp.clip(x, -0.5, 0.5), jnp.sin(x), jnp.cos(x), jax.scipy.special.erf(x), jnp.log1p(jnp.abs(x)), jnp.expm1(x),
            jnp.sign(x), jnp.round(x), jnp.mod(x, 0.3), jnp.arctan2(x, x + 1))


def where_int(x):
    i = jnp.arange(x.shape[0])
    return jnp.where(i % 2 == 0, x[:, 0], -x[:, 0]), jnp.bincount(jnp.array([1, 2, 2, 3]), length=5)


def one_hot_ce(logits, y):
    return optax_like(logits, jax.nn.one_hot(y, logits.shape[-1]))


def optax_like(logits, onehot):
    return -(onehot * jax.nn.log_softmax(logits)).sum(-1).mean()


def embedding(table, ids):
    e = table[ids]
    return (e ** 2).sum()


CASES = {
        "rnn_scan_grad": (jax.grad(rnn_loss), (r(16, 16) * .1, r(5, 4, 16))),
    "dropout_threefry": (dropout, (jax.random.PRNGKey(0), r(8, 32))),
    "conv_pool_grad": (jax.grad(conv_pool, argnums=1), (r(2, 8, 8, 3), r(3, 3, 3, 4))),
    "cumsum": (cumsum_stuff, (r(4, 10),)),
    "topk": (topk, (r(4, 10),)),
    "misc_elementwise": (misc, (r(4, 10),)),
    "where_int_bincount": (where_int, (r(6, 3),)),
    "one_hot_ce_grad": (jax.grad(one_hot_ce), (r(8, 10), np.arange(8, dtype=np.int32) % 10)),
    "embedding_grad": (jax.grad(embedding), (r(20, 8), np.array([[1, 2], [3, 19]], np.int32))),
    "median_percentile": (lambda x: (jnp.median(x, 1), jnp.percentile(x, 25., axis=0)), (r(5, 9),)),
    "unique_sorted_search": (lambda x: jnp.searchsorted(jnp.sort(x), x), (r(12),)),
    "linalg_norm": (lambda x: (jnp.linalg.norm(x, axis=1), jnp.max(jnp.abs(x))), (r(5, 9),)),
    "softplus_logsumexp": (lambda x: (jax.nn.softplus(x), jax.scipy.special.logsumexp(x, 1)), (r(5, 9),)),
    "triu_diag": (lambda x: (jnp.triu(x), jnp.diag(x), jnp.trace(x)), (r(6, 6),)),
    "roll_flip": (lambda x: (jnp.roll(x, 2, 1), jnp.flip(x, 0), jnp.tile(x, (1, 2))), (r(4, 6),)),
    "scan_ys": (lambda xs: jax.lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)[1], (r(7),)),
    "scan_rows": (lambda xs: jax.lax.scan(lambda c, x: (c + x, c * 2), jnp.zeros(3), xs)[1], (r(7, 3),)),
    "fori_dynamic_index": (lambda x: jax.lax.fori_loop(0, 5, lambda i, a: a.at[i].add(x[i] * 2), jnp.zeros(5)), (r(5),)),
    "cumsum_rev": (lambda x: jnp.cumsum(x[::-1], 0), (r(9, 4),)),
    "logaddexp_cummax": (lambda x: (jnp.logaddexp(x, 1.0), jax.lax.cummax(x, 1)), (r(3, 7),)),
    "argsort_take": (lambda x: x[jnp.argsort(x[:, 0])], (r(6, 3),)),
    "isclose_allclose": (lambda x: (jnp.isclose(x, x + 1e-9), jnp.isnan(x).any()), (r(4, 4),)),
    "int_ops": (lambda a: (a // 3, a % 5, a ** 2, jnp.right_shift(a, 1), a.astype(jnp.float32) / 7), (np.arange(-6, 6, dtype=np.int32),)),
    "bool_reduce": (lambda x: ((x > 0).all(1), (x > 0).sum(0), jnp.count_nonzero(x > 0.5)), (r(5, 6),)),
    "topk_op": (lambda x: jax.lax.top_k(x, 3), (r(4, 10),)),
    "f16_mlp": (lambda x, w: jax.nn.relu(x.astype(jnp.float16) @ w.astype(jnp.float16)).astype(jnp.float32), (r(4, 8), r(8, 5))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_matches_cpu(name):
    fun, args = CASES[name]
    expected = jax.tree_util.tree_map(np.asarray, jax.jit(fun)(*args))
    got = tpusim.device_get(tpusim.jit(fun, backend="model", config=CONFIG, precision="high")(*args))
    for g, e in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected)):
        assert np.shape(g) == np.shape(e)
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(e, np.float64), rtol=2e-3, atol=2e-3,
                                   equal_nan=True)


def test_transformer_step_is_refused_on_tiny_for_its_code_size_only():
    """The transformer block's gradient needs more than tiny's 4096 IMEM words (it runs on v2); the refusal
    says so with the runtime's out-of-memory message."""
    with pytest.raises(Exception, match="Ran out of memory in memory space imem"):
        tpusim.jit(jax.grad(transformer_loss), backend="model", config=CONFIG)(TPARAMS, TX, TY)
