"""Variable initializers of TensorFlow 1 (``tf.zeros_initializer``,
``tf.glorot_uniform_initializer``, ``tf.initializers.*``, ...).

An initializer is a callable object ``init(shape, dtype=None, partition_info=None)`` that builds
the ops computing an initial value of that shape, as in TensorFlow 1; ``get_variable`` calls it.
The random ones draw from the random ops (:mod:`opweave.ops.random_ops`) with the initializer's
``seed`` as op-level seed, so seeds work as there (the numbers are not TensorFlow's, the
distributions are). ``partition_info`` (anything with a ``full_shape``; ``var_offset`` too for
:class:`Identity`) makes the fan computation use the full variable's shape, as for a partitioned
variable.

>>> import opweave as ow
>>> init = ow.glorot_uniform_initializer(seed=1)
>>> with ow.Graph().as_default(), ow.Session() as s:
...     w = s.run(init([20, 30]))
>>> w.shape, bool(abs(w).max() <= (6 / 50) ** 0.5)
((20, 30), True)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..dtypes import DType, as_dtype, float32
from ..framework import Tensor
from ..tensor_shape import TensorShape
from . import _checks
from ._op_def import to_array
from .array_ops import constant, eye, ones, reshape, transpose, zeros
from .array_ops import slice as slice_
from .math_ops import multiply
from .random_ops import random_normal, random_uniform, truncated_normal
from .script_ops import py_function

__all__ = [
    "constant_initializer",
    "glorot_normal_initializer",
    "glorot_uniform_initializer",
    "ones_initializer",
    "orthogonal_initializer",
    "random_normal_initializer",
    "random_uniform_initializer",
    "truncated_normal_initializer",
    "uniform_unit_scaling_initializer",
    "variance_scaling_initializer",
    "zeros_initializer",
]

#: The standard deviation of a standard normal truncated to [-2, 2]: a truncated normal of stddev
#: ``s / TRUNCATED_STDDEV`` has standard deviation ``s`` (TensorFlow's correction).
TRUNCATED_STDDEV = 0.87962566103423978


def _float_dtype(dtype: Any) -> DType:
    dt = as_dtype(dtype)
    if not dt.is_floating:
        raise ValueError(f"Expected floating point type, got {dt.name}.")
    return dt


def _static_dims(shape: Any, what: str = "shape") -> list[int]:
    """A shape whose sizes are known before the run, as a list of ints."""
    if isinstance(shape, Tensor):
        raise TypeError(
            f"{what} must be known when the initializer is called (a list of ints or a "
            f"TensorShape), got the tensor {shape.name!r}"
        )
    if isinstance(shape, TensorShape):
        if not shape.is_fully_defined():
            raise ValueError(f"{what} {shape} must be fully defined")
        return [int(d) for d in shape.as_list()]  # type: ignore[arg-type]
    if _checks.is_exact_int(shape):
        shape = [shape]
    return _checks.check_dims(
        [getattr(d, "value", d) for d in shape] if not isinstance(shape, np.ndarray) else shape,
        what,
        allow_unknown=False,
    )


def _compute_fans(shape: list[int]) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of ``shape``, as TensorFlow computes them: a vector counts
    its length both ways, a matrix ``[in, out]``, a convolution kernel ``[..., in, out]`` times
    its receptive field (the product of the leading, spatial dimensions)."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive_field = math.prod(shape[:-2])
    return shape[-2] * receptive_field, shape[-1] * receptive_field


class Initializer:
    """The base of the initializers: ``init(shape, dtype=None, partition_info=None)`` returns a
    tensor, ``get_config()`` the constructor's arguments (``from_config`` inverts it)."""

    dtype: DType = float32

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        raise NotImplementedError

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments, JSON-serialisable."""
        return {}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Initializer:
        """``cls(**config)``: the initializer ``get_config`` describes."""
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    """Zeros (``tf.zeros_initializer``).

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     s.run(ow.zeros_initializer()([2], ow.int32)).tolist()
    [0, 0]
    """

    def __init__(self, dtype: Any = float32) -> None:
        self.dtype = as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        return zeros(shape, self.dtype if dtype is None else dtype)

    def get_config(self) -> dict[str, Any]:
        return {"dtype": self.dtype.name}


class Ones(Initializer):
    """Ones (``tf.ones_initializer``)."""

    def __init__(self, dtype: Any = float32) -> None:
        self.dtype = as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        return ones(shape, self.dtype if dtype is None else dtype)

    def get_config(self) -> dict[str, Any]:
        return {"dtype": self.dtype.name}


class Constant(Initializer):
    """A constant value (``tf.constant_initializer``): a scalar fills the shape; a list or array
    is laid out in row-major order, and when it has fewer elements than the shape its last
    element fills the rest (TensorFlow 1's rule); more elements than the shape is a ValueError.

    Parameters
    ----------
    value : scalar, list, tuple or numpy.ndarray
    dtype : DType
        The default dtype of the result.
    verify_shape : bool
        Require ``value`` to have exactly the requested shape (TypeError otherwise).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     s.run(ow.constant_initializer([1, 2, 3])([2, 3])).tolist()
    [[1.0, 2.0, 3.0], [3.0, 3.0, 3.0]]
    """

    def __init__(self, value: Any = 0, dtype: Any = float32, verify_shape: bool = False) -> None:
        if not (np.isscalar(value) or isinstance(value, (list, tuple, np.ndarray))):
            raise TypeError(
                f"Invalid type for initial value={_checks._short(value)} of type: "
                f"{type(value).__name__}. Expected Python scalar, list or tuple of values, or "
                "numpy.ndarray."
            )
        self.value = value
        self.dtype = as_dtype(dtype)
        self._verify_shape = _checks.check_bool(verify_shape, "verify_shape")

    def __call__(
        self,
        shape: Any,
        dtype: Any = None,
        partition_info: Any = None,
        verify_shape: bool | None = None,
    ) -> Tensor:
        dt = self.dtype if dtype is None else as_dtype(dtype)
        verify = self._verify_shape if verify_shape is None else verify_shape
        dims = _static_dims(shape)
        arr = to_array(self.value, dt)
        n = math.prod(dims)
        if verify and arr.shape != tuple(dims):
            raise TypeError(f"Expected Tensor's shape: {tuple(dims)}, got {arr.shape}.")
        flat = arr.reshape(-1)
        if flat.size > n:
            raise ValueError(
                f"Too many elements provided. Needed at most {n}, but received {flat.size}"
            )
        if 0 < flat.size < n:
            flat = np.concatenate([flat, np.full(n - flat.size, flat[-1], dtype=flat.dtype)])
        if flat.size == 0 and n > 0:
            raise ValueError(f"Cannot fill shape {dims} from an empty value")
        return constant(flat.reshape(dims), dtype=dt)

    def get_config(self) -> dict[str, Any]:
        return {"value": self.value, "dtype": self.dtype.name}


class RandomUniform(Initializer):
    """Uniform values in ``[minval, maxval)`` (``tf.random_uniform_initializer``); ``maxval``
    defaults to 1 for floats.

    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     x = s.run(ow.random_uniform_initializer(-1.0, 1.0, seed=3)([100]))
    >>> bool(x.min() >= -1 and x.max() < 1)
    True
    """

    def __init__(
        self, minval: Any = 0.0, maxval: Any = None, seed: int | None = None, dtype: Any = float32
    ) -> None:
        self.minval = minval
        self.maxval = maxval
        self.seed = seed
        self.dtype = as_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = self.dtype if dtype is None else dtype
        return random_uniform(shape, self.minval, self.maxval, dt, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {
            "minval": self.minval,
            "maxval": self.maxval,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class RandomNormal(Initializer):
    """Normal values (``tf.random_normal_initializer``)."""

    def __init__(
        self, mean: Any = 0.0, stddev: Any = 1.0, seed: int | None = None, dtype: Any = float32
    ) -> None:
        self.mean = mean
        self.stddev = stddev
        self.seed = seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = self.dtype if dtype is None else dtype
        return random_normal(shape, self.mean, self.stddev, dt, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "stddev": self.stddev,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class TruncatedNormal(RandomNormal):
    """Normal values drawn again beyond two standard deviations
    (``tf.truncated_normal_initializer``)."""

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = self.dtype if dtype is None else dtype
        return truncated_normal(shape, self.mean, self.stddev, dt, seed=self.seed)


class UniformUnitScaling(Initializer):
    """Uniform in ``[-m, m)`` with ``m = factor * sqrt(3 / input_size)``, ``input_size`` the
    product of all but the last dimension (``tf.uniform_unit_scaling_initializer``, deprecated
    in TensorFlow for ``variance_scaling_initializer(distribution="uniform")``)."""

    def __init__(self, factor: float = 1.0, seed: int | None = None, dtype: Any = float32) -> None:
        self.factor = _checks.check_float(factor, "factor")
        self.seed = seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = self.dtype if dtype is None else dtype
        scale_shape = _static_dims(partition_info.full_shape if partition_info else shape)
        input_size = max(float(math.prod(scale_shape[:-1])), 1.0)
        max_val = math.sqrt(3 / input_size) * self.factor
        return random_uniform(shape, -max_val, max_val, dt, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {"factor": self.factor, "seed": self.seed, "dtype": self.dtype.name}


class VarianceScaling(Initializer):
    """Values whose variance is ``scale / n`` (``tf.variance_scaling_initializer``), ``n`` the
    fan-in, the fan-out or their mean (``mode``); a convolution kernel's fans include its
    receptive field.

    Parameters
    ----------
    scale : float
        Positive.
    mode : {"fan_in", "fan_out", "fan_avg"}
    distribution : {"truncated_normal", "normal", "untruncated_normal", "uniform"}
        ``"truncated_normal"`` (and its TensorFlow 1 alias ``"normal"``): a normal truncated at
        two standard deviations, its stddev divided by 0.87962566103423978 so the truncated
        values have variance ``scale / n``; ``"untruncated_normal"``: a normal of stddev
        ``sqrt(scale / n)``; ``"uniform"``: uniform in ``[-sqrt(3 scale / n), sqrt(3 scale / n))``.
    seed : int, optional
    dtype : DType
        A floating dtype.

    Examples
    --------
    >>> import opweave as ow
    >>> init = ow.variance_scaling_initializer(2.0, distribution="uniform", seed=1)
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     w = s.run(init([3, 3, 16, 32]))  # fan_in = 3 * 3 * 16
    >>> bool(abs(w).max() < (6 / 144) ** 0.5)
    True
    """

    def __init__(
        self,
        scale: float = 1.0,
        mode: str = "fan_in",
        distribution: str = "truncated_normal",
        seed: int | None = None,
        dtype: Any = float32,
    ) -> None:
        scale = _checks.check_float(scale, "scale")
        if scale <= 0.0:
            raise ValueError(f"Argument `scale` must be a positive float. Received: {scale}")
        mode = _checks.check_string(mode, "mode")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(
                "Argument `mode` should be one of ('fan_in', 'fan_out', 'fan_avg'). Received: "
                f"{mode}"
            )
        distribution = _checks.check_string(distribution, "distribution").lower()
        if distribution not in ("normal", "uniform", "truncated_normal", "untruncated_normal"):
            raise ValueError(
                "Argument `distribution` should be one of ('normal', 'uniform', "
                f"'truncated_normal', 'untruncated_normal'). Received: {distribution}"
            )
        self.scale = scale
        self.mode = mode
        self.distribution = distribution
        self.seed = seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = self.dtype if dtype is None else dtype
        fan_in, fan_out = _compute_fans(
            _static_dims(partition_info.full_shape if partition_info else shape)
        )
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution in ("normal", "truncated_normal"):
            stddev = math.sqrt(scale) / TRUNCATED_STDDEV
            return truncated_normal(shape, 0.0, stddev, dt, seed=self.seed)
        if self.distribution == "untruncated_normal":
            return random_normal(shape, 0.0, math.sqrt(scale), dt, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_uniform(shape, -limit, limit, dt, seed=self.seed)

    def get_config(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "mode": self.mode,
            "distribution": self.distribution,
            "seed": self.seed,
            "dtype": self.dtype.name,
        }


class GlorotUniform(VarianceScaling):
    """Glorot / Xavier uniform: ``variance_scaling(1.0, "fan_avg", "uniform")``, i.e. uniform in
    ``[-sqrt(6 / (fan_in + fan_out)), ...)`` (``tf.glorot_uniform_initializer``, the default of
    ``get_variable``)."""

    def __init__(self, seed: int | None = None, dtype: Any = float32) -> None:
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


class GlorotNormal(VarianceScaling):
    """Glorot / Xavier normal: ``variance_scaling(1.0, "fan_avg", "truncated_normal")``
    (``tf.glorot_normal_initializer``)."""

    def __init__(self, seed: int | None = None, dtype: Any = float32) -> None:
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, dtype)

    def get_config(self) -> dict[str, Any]:
        return {"seed": self.seed, "dtype": self.dtype.name}


def _orthonormal(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The Q of a's QR decomposition with R's diagonal made non-negative (so Q is uniformly
    distributed over orthogonal matrices, as TensorFlow does it)."""
    wide = a.astype(np.float64)
    q, r = np.linalg.qr(wide)
    signs = np.sign(np.diag(r))
    signs[signs == 0] = 1.0
    return (q * signs).astype(a.dtype)


class Orthogonal(Initializer):
    """An orthogonal matrix, or a tensor whose flattening to ``[prod(shape[:-1]), shape[-1]]`` has
    orthonormal rows or columns, times ``gain`` (``tf.orthogonal_initializer``).

    The normal draws are a seeded random op; the QR decomposition runs in NumPy through a
    ``py_function``, so a graph holding it runs in this process only (no GraphDef export).

    >>> import numpy as np, opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     q = s.run(ow.orthogonal_initializer(seed=1)([4, 4]))
    >>> bool(np.allclose(q @ q.T, np.eye(4), atol=1e-5))
    True
    """

    def __init__(self, gain: float = 1.0, seed: int | None = None, dtype: Any = float32) -> None:
        self.gain = _checks.check_float(gain, "gain")
        self.seed = seed
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        dt = _float_dtype(self.dtype if dtype is None else dtype)
        dims = _static_dims(shape)
        if len(dims) < 2:
            raise ValueError(
                "The tensor to initialize, specified by argument `shape` must be at least "
                f"two-dimensional. Received shape={dims}"
            )
        rows, cols = math.prod(dims[:-1]), dims[-1]
        flat = [cols, rows] if rows < cols else [rows, cols]
        a = random_normal(flat, dtype=dt, seed=self.seed)
        q: Tensor = py_function(_orthonormal, [a], dt, name="orthogonal_qr")
        q.set_shape(flat)
        if rows < cols:
            q = transpose(q)
        return multiply(reshape(q, dims), self.gain)

    def get_config(self) -> dict[str, Any]:
        return {"gain": self.gain, "seed": self.seed, "dtype": self.dtype.name}


class Identity(Initializer):
    """The identity matrix times ``gain`` (``tf.initializers.identity``), for 2-D shapes; with
    ``partition_info``, this partition's slice of the full identity."""

    def __init__(self, gain: float = 1.0, dtype: Any = float32) -> None:
        self.gain = _checks.check_float(gain, "gain")
        self.dtype = _float_dtype(dtype)

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        full = _static_dims(partition_info.full_shape if partition_info else shape)
        if len(full) != 2:
            raise ValueError(
                "The tensor to initialize, specified by argument `shape` must be "
                f"two-dimensional. Received shape={full}"
            )
        dt = self.dtype if dtype is None else as_dtype(dtype)
        init: Tensor = eye(full[0], full[1], dtype=dt)
        if partition_info is not None:
            init = slice_(init, list(partition_info.var_offset), _static_dims(shape))
        return multiply(init, self.gain)

    def get_config(self) -> dict[str, Any]:
        return {"gain": self.gain, "dtype": self.dtype.name}


def lecun_normal(seed: int | None = None) -> VarianceScaling:
    """``variance_scaling(1.0, "fan_in", "truncated_normal")``."""
    return VarianceScaling(1.0, "fan_in", "truncated_normal", seed)


def lecun_uniform(seed: int | None = None) -> VarianceScaling:
    """``variance_scaling(1.0, "fan_in", "uniform")``."""
    return VarianceScaling(1.0, "fan_in", "uniform", seed)


def he_normal(seed: int | None = None) -> VarianceScaling:
    """``variance_scaling(2.0, "fan_in", "truncated_normal")`` (He et al.)."""
    return VarianceScaling(2.0, "fan_in", "truncated_normal", seed)


def he_uniform(seed: int | None = None) -> VarianceScaling:
    """``variance_scaling(2.0, "fan_in", "uniform")`` (He et al.)."""
    return VarianceScaling(2.0, "fan_in", "uniform", seed)


zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
uniform_unit_scaling_initializer = UniformUnitScaling
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
orthogonal_initializer = Orthogonal
identity_initializer = Identity
