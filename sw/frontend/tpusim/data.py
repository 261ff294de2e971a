"""Data: IDX files (MNIST, Fashion-MNIST) and the seeded batch order of ``fit``.

Debian's ``dataset-fashion-mnist`` installs the four gzipped IDX files in /usr/share/datasets/fashion-mnist;
MNIST's files have the same names and format.
"""

from __future__ import annotations

import gzip
import os
import struct

import numpy as np

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"

# IDX element type codes (third byte of the magic number).
_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
               0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def read_idx(path: str) -> np.ndarray:
    """An IDX file (gzipped when its name ends in .gz) as a NumPy array of its shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_DTYPES:
        raise ValueError(f"{path}: not an IDX file (magic {data[:4].hex()})")
    dtype = np.dtype(_IDX_DTYPES[data[2]])
    rank = data[3]
    header = 4 + 4 * rank
    if len(data) < header:
        raise ValueError(f"{path}: IDX header cut short")
    dims = struct.unpack(f">{rank}I", data[4:header])
    count = int(np.prod(dims, dtype=np.int64))
    if len(data) - header != count * dtype.itemsize:
        raise ValueError(f"{path}: IDX dimensions {dims} need {count * dtype.itemsize} bytes of data, "
                         f"the file has {len(data) - header}")
    return np.frombuffer(data, dtype, count, header).reshape(dims).astype(dtype.newbyteorder("="))


def load_fashion_mnist(directory: str = FASHION_MNIST_DIR):
    """((x_train, y_train), (x_test, y_test)): images as float32 in [0, 1] of shape [n, 28, 28], labels int32."""
    def part(prefix):
        images = read_idx(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz"))
        labels = read_idx(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"))
        if images.shape[0] != labels.shape[0]:
            raise ValueError(f"{directory}: {images.shape[0]} {prefix} images but {labels.shape[0]} labels")
        return (images.astype(np.float32) / 255.0), labels.astype(np.int32)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"{directory}: no Fashion-MNIST here (Debian package dataset-fashion-mnist)")
    return part("train"), part("t10k")


def epoch_order(seed: int, epoch: int, count: int) -> np.ndarray:
    """The example order of one epoch: a permutation that depends on (seed, epoch) only, so that a run
    resumed from a checkpoint sees the same batches as an uninterrupted one."""
    return np.random.default_rng([seed, epoch]).permutation(count)


def batch_count(count: int, batch_size: int) -> int:
    """Batches per epoch with drop_remainder (static shapes: every batch has batch_size examples)."""
    return count // batch_size
