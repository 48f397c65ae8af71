"""MNIST for TensorFlow 1 tutorials: ``input_data.read_data_sets(train_dir, one_hot=True)``.

opweave does not download anything. When ``train_dir`` holds the four MNIST files in their
original IDX format (``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
``t10k-images-idx3-ubyte.gz``, ``t10k-labels-idx1-ubyte.gz``, gzipped or not), they are read
(checked against the format: a malformed file is a ValueError, never executed); otherwise a
synthetic MNIST-shaped data set is generated instead -- 28x28 images of ten learnable classes
(noisy, shifted class prototypes) with the same shapes, dtypes and API -- and a note says so.

>>> from opweave.examples.tutorials.mnist import input_data
>>> mnist = input_data.read_data_sets("/nonexistent", one_hot=True, synthetic_size=600)
>>> mnist.train.images.shape, mnist.train.labels.shape, mnist.test.images.dtype
((450, 784), (450, 10), dtype('float32'))
>>> batch_x, batch_y = mnist.train.next_batch(100)
>>> batch_x.shape
(100, 784)
"""

from __future__ import annotations

import gzip
import os
import sys
from typing import Any, NamedTuple

import numpy as np

__all__ = ["DataSet", "Datasets", "read_data_sets"]

_FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
_MAX_BYTES = 64 << 20  # the real files are 47 MB at most


class DataSet:
    """One split: ``images`` (float32 in [0, 1], flattened to 784 unless ``reshape=False``),
    ``labels`` (class ids, or one-hot float rows), ``next_batch(n)`` shuffling each epoch."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, seed: int | None = None) -> None:
        if len(images) != len(labels):
            raise ValueError(f"{len(images)} images but {len(labels)} labels")
        self._images = images
        self._labels = labels
        self._num_examples = len(images)
        self._epochs_completed = 0
        self._index_in_epoch = 0
        self._rng = np.random.default_rng(seed)

    @property
    def images(self) -> np.ndarray:
        return self._images

    @property
    def labels(self) -> np.ndarray:
        return self._labels

    @property
    def num_examples(self) -> int:
        return self._num_examples

    @property
    def epochs_completed(self) -> int:
        return self._epochs_completed

    def next_batch(
        self, batch_size: int, fake_data: bool = False, shuffle: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """The next ``batch_size`` examples; the order is reshuffled at each epoch."""
        if batch_size <= 0 or batch_size > self._num_examples:
            raise ValueError(f"batch_size must be in 1..{self._num_examples}, got {batch_size}")
        start = self._index_in_epoch
        if start == 0 and self._epochs_completed == 0 and shuffle:
            self._shuffle()
        if start + batch_size > self._num_examples:
            self._epochs_completed += 1
            rest = self._num_examples - start
            head_x, head_y = self._images[start:], self._labels[start:]
            if shuffle:
                self._shuffle()
            self._index_in_epoch = batch_size - rest
            end = self._index_in_epoch
            return (
                np.concatenate([head_x, self._images[:end]]),
                np.concatenate([head_y, self._labels[:end]]),
            )
        self._index_in_epoch += batch_size
        end = self._index_in_epoch
        return self._images[start:end], self._labels[start:end]

    def _shuffle(self) -> None:
        perm = self._rng.permutation(self._num_examples)
        self._images = self._images[perm]
        self._labels = self._labels[perm]


class Datasets(NamedTuple):
    train: DataSet
    validation: DataSet
    test: DataSet


def _read_idx(path: str, kind: int) -> np.ndarray:
    """An IDX file: magic 0x0000 08 <ndim>, big-endian int32 dims, then unsigned bytes."""
    opener: Any = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read(_MAX_BYTES + 1)
    if len(data) > _MAX_BYTES:
        raise ValueError(f"{path}: larger than any MNIST file")
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08 or data[3] != kind:
        raise ValueError(f"{path}: not an IDX file of {kind} dimensions of unsigned bytes")
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(kind)]
    count = int(np.prod(dims, dtype=np.int64))
    body = data[4 + 4 * kind :]
    if len(body) != count:
        raise ValueError(f"{path}: header says {count} values, the file holds {len(body)}")
    return np.frombuffer(body, dtype=np.uint8).reshape(dims)


def _find(train_dir: str, stem: str) -> str | None:
    for name in (stem + ".gz", stem):
        path = os.path.join(train_dir, name)
        if os.path.isfile(path):
            return path
    return None


def _synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` 28x28 images of ten classes: a fixed random stroke pattern per class, shifted by a
    pixel or two and with noise, so that a linear model reaches ~90% and an MLP more."""
    rng = np.random.default_rng(seed)
    protos = np.random.default_rng(12345).random((10, 28, 28)) ** 4
    labels = rng.integers(0, 10, size=n)
    images = np.empty((n, 28, 28), np.float32)
    for i, c in enumerate(labels):
        img = np.roll(protos[c], (rng.integers(-2, 3), rng.integers(-2, 3)), axis=(0, 1))
        images[i] = np.clip(img + 0.3 * rng.standard_normal((28, 28)), 0, 1)
    return (images * 255).astype(np.uint8), labels.astype(np.uint8)


def read_data_sets(
    train_dir: str,
    fake_data: bool = False,
    one_hot: bool = False,
    dtype: Any = np.float32,
    reshape: bool = True,
    validation_size: int = 5000,
    seed: int | None = None,
    source_url: str | None = None,
    synthetic_size: int = 12000,
) -> Datasets:
    """The MNIST splits from ``train_dir`` (IDX files), or a synthetic stand-in (see module)."""
    paths = {k: _find(train_dir, v) for k, v in _FILES.items()}
    if all(paths.values()):
        train_x = _read_idx(paths["train_images"], 3)  # type: ignore[arg-type]
        train_y = _read_idx(paths["train_labels"], 1)  # type: ignore[arg-type]
        test_x = _read_idx(paths["test_images"], 3)  # type: ignore[arg-type]
        test_y = _read_idx(paths["test_labels"], 1)  # type: ignore[arg-type]
    else:
        print(
            f"opweave: no MNIST files in {train_dir!r} (no download); using a synthetic "
            "MNIST-shaped data set",
            file=sys.stderr,
        )
        n_test = max(synthetic_size // 6, 100)
        train_x, train_y = _synthetic(synthetic_size - n_test, 1)
        test_x, test_y = _synthetic(n_test, 2)
        validation_size = min(validation_size, len(train_x) // 10)

    def prepare(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        images = x.astype(np.float32) / 255.0 if np.dtype(dtype) == np.float32 else x
        if reshape:
            images = images.reshape(len(images), -1)
        else:
            images = images.reshape(len(images), 28, 28, 1)
        labels = np.eye(10, dtype=np.float32)[y] if one_hot else y
        return images, labels

    tx, ty = prepare(train_x, train_y)
    ex, ey = prepare(test_x, test_y)
    return Datasets(
        train=DataSet(tx[validation_size:], ty[validation_size:], seed),
        validation=DataSet(tx[:validation_size], ty[:validation_size], seed),
        test=DataSet(ex, ey, seed),
    )
