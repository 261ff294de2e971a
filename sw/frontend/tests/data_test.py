"""IDX reading (Fashion-MNIST's format), its errors, and the seeded epoch order."""

import gzip
import struct

import numpy as np
import pytest

from tpusim import data


def write_idx(path, array, type_code=0x08):
    header = bytes([0, 0, type_code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(array.dtype.newbyteorder(">")).tobytes())


def test_reads_idx_files_of_any_rank_and_type(tmp_path):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    write_idx(str(tmp_path / "i.gz"), images)
    np.testing.assert_array_equal(data.read_idx(str(tmp_path / "i.gz")), images)
    values = np.array([1, -2, 70000], np.int32)
    write_idx(str(tmp_path / "v.gz"), values, 0x0C)
    np.testing.assert_array_equal(data.read_idx(str(tmp_path / "v.gz")), values)


def test_bad_idx_files_are_named(tmp_path):
    bad = tmp_path / "bad.gz"
    with gzip.open(bad, "wb") as f:
        f.write(b"\x1f\x00\x08\x01")
    with pytest.raises(ValueError, match="not an IDX file"):
        data.read_idx(str(bad))
    short = tmp_path / "short.gz"
    with gzip.open(short, "wb") as f:
        f.write(bytes([0, 0, 8, 1]) + struct.pack(">I", 10) + b"\x00" * 3)
    with pytest.raises(ValueError, match="need 10 bytes of data, the file has 3"):
        data.read_idx(str(short))


def test_fashion_mnist_as_debian_ships_it():
    (x_train, y_train), (x_test, y_test) = data.load_fashion_mnist()
    assert x_train.shape == (60000, 28, 28) and x_test.shape == (10000, 28, 28)
    assert x_train.dtype == np.float32 and 0.0 == x_train.min() and x_train.max() == 1.0
    assert y_train.dtype == np.int32 and set(np.unique(y_test)) == set(range(10))
    assert np.bincount(y_train).tolist() == [6000] * 10


def test_epoch_order_depends_on_seed_and_epoch_only():
    a = data.epoch_order(3, 1, 100)
    assert sorted(a) == list(range(100))
    np.testing.assert_array_equal(a, data.epoch_order(3, 1, 100))
    assert not np.array_equal(a, data.epoch_order(3, 2, 100))
    assert not np.array_equal(a, data.epoch_order(4, 1, 100))
    assert data.batch_count(100, 32) == 3
