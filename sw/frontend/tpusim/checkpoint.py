"""Checkpoints: a pytree of arrays and a JSON-able dict of training state in one .npz file.

Leaves are stored in ``jax.tree_util`` order with their dtype names (bfloat16 as its 16-bit pattern), so a
restore checks the count, shapes and dtypes against a template tree of the same structure (a freshly
initialised model) and gives back exactly the bytes that were saved.
"""

from __future__ import annotations

import json
import os

import jax
import ml_dtypes
import numpy as np

_FORMAT = "tpusim-checkpoint-1"


def save(path: str, tree, meta: dict) -> None:
    """Writes ``tree`` (leaves: anything np.asarray accepts) and ``meta`` to ``path``, atomically."""
    leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(tree)]
    arrays = {}
    dtypes = []
    for i, leaf in enumerate(leaves):
        dtypes.append(leaf.dtype.name)
        arrays[f"leaf_{i}"] = leaf.view(np.uint16) if leaf.dtype == ml_dtypes.bfloat16 else leaf
    header = {"format": _FORMAT, "dtypes": dtypes, "meta": meta}
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    temporary = path + ".tmp"
    with open(temporary, "wb") as f:
        np.savez(f, **arrays)
    os.replace(temporary, path)


def restore(path: str, template):
    """(tree, meta) from ``path``; the tree has the structure of ``template`` and must match its leaves'
    shapes and dtypes."""
    with np.load(path) as data:
        header = json.loads(bytes(data["header"]).decode())
        if header.get("format") != _FORMAT:
            raise ValueError(f"{path}: not a tpusim checkpoint")
        leaves = []
        for i, dtype in enumerate(header["dtypes"]):
            value = data[f"leaf_{i}"]
            leaves.append(value.view(ml_dtypes.bfloat16) if dtype == "bfloat16" else value)
    template_leaves, treedef = jax.tree_util.tree_flatten(template)
    if len(template_leaves) != len(leaves):
        raise ValueError(f"{path}: {len(leaves)} arrays, the model has {len(template_leaves)}")
    for i, (saved, expected) in enumerate(zip(leaves, template_leaves)):
        expected = np.asarray(expected)
        if saved.shape != expected.shape or saved.dtype != expected.dtype:
            raise ValueError(f"{path}: array {i} is {saved.dtype}{list(saved.shape)}, "
                             f"the model has {expected.dtype}{list(expected.shape)}")
    return jax.tree_util.tree_unflatten(treedef, leaves), header["meta"]
