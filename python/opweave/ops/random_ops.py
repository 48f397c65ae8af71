"""Random ops: normal, truncated normal and uniform values, shuffles, categorical samples and
dropout, seeded as in TensorFlow 1 (``tf.random_normal``, ``tf.set_random_seed``,
``tf.nn.dropout``, ...).

Seeds follow TensorFlow 1's rules (:func:`get_seed`): a graph-level seed
(:func:`set_random_seed`) and an op-level ``seed`` combine into the op's two seed attributes, so
the same graph with the same seeds gives the same numbers in every fresh session, and an op given
no seed at all gets fresh numbers in each session. Within one session each run of a random op
continues its sequence (the generator position is session state); two sessions on one graph
produce the same sequences independently.

The numbers come from a counter-based generator (Philox4x32-10, as in TensorFlow) that computes
every output element from (seeds, the op's run count in the session, the element's index) alone,
so they are the same for any number of threads. They are **not** TensorFlow's numbers (its
kernels map the generator's words to values differently); the distributions, shapes, dtypes and
seed semantics are TensorFlow's.

Random ops run only in a Session: ``opweave.kernels`` does not offer them, since they keep state
between runs. They are not differentiable (their gradient is None), as in TensorFlow.

>>> import opweave as ow
>>> with ow.Graph().as_default():
...     ow.set_random_seed(1)
...     x = ow.random_normal([2, 3], seed=7)
...     with ow.Session() as s1, ow.Session() as s2:
...         bool((s1.run(x) == s2.run(x)).all())
True
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..dtypes import ANY, FLOATS, INDEX, REALS, DType, as_dtype, float32, int32, int64
from ..framework import Shape, Tensor, get_default_graph, name_scope
from ..tensor_shape import TensorShape
from . import _checks
from ._op_def import Attr, OpDef, ShapeContext, convert_to_tensor, same_shape
from .array_ops import cast
from .array_ops import shape as shape_of
from .math_ops import add, greater_equal, multiply, realdiv, select_v2, subtract

__all__ = [
    "get_seed",
    "multinomial",
    "random_normal",
    "random_shuffle",
    "random_uniform",
    "set_random_seed",
    "truncated_normal",
]

TensorLike = Any

#: The graph-level seed used when only an op-level seed is given (TensorFlow's value).
DEFAULT_GRAPH_SEED = 87654321
_MAXINT32 = 2**31 - 1


# -- seeds ---------------------------------------------------------------------------------------


def set_random_seed(seed: int | None) -> None:
    """Set the graph-level random seed of the default graph (``None`` unsets it).

    Random ops combine it with their own ``seed`` argument (see :func:`get_seed`): with a
    graph-level seed, a program's random ops give the same numbers in every fresh session,
    each op a different sequence.

    Parameters
    ----------
    seed : int or None
        Any integer that fits in int64 (bools and floats are a TypeError).

    Examples
    --------
    >>> import opweave as ow
    >>> g = ow.Graph()
    >>> with g.as_default():
    ...     ow.set_random_seed(42)
    >>> g.seed
    42
    """
    checked = None if seed is None else _checks.check_int(seed, "seed", op="set_random_seed")
    get_default_graph().seed = checked


def _truncate_seed(seed: int) -> int:
    return seed % _MAXINT32  # into [0, 2**31 - 1), as TensorFlow does


def get_seed(op_seed: int | None) -> tuple[int | None, int | None]:
    """The two seeds a random op uses, from the graph-level seed and ``op_seed``, by TensorFlow
    1's rules.

    - graph seed and op seed: both (each taken modulo ``2**31 - 1``);
    - graph seed only: the op seed is the number of ops in the graph when the random op is
      created, so each random op gets its own sequence and the same program the same seeds;
    - op seed only: the graph seed is ``DEFAULT_GRAPH_SEED`` (87654321);
    - neither: ``(None, None)``, which the op takes as "a fresh seed in every session".

    ``(0, 0)`` (which the kernels read as "no seed") becomes ``(0, 2**31 - 1)``, as in
    TensorFlow.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     print(ow.get_seed(None), ow.get_seed(5))
    ...     ow.set_random_seed(3)
    ...     print(ow.get_seed(5))
    (None, None) (87654321, 5)
    (3, 5)
    """
    g = get_default_graph()
    graph_seed = g.seed
    if graph_seed is not None:
        graph_seed = _checks.check_int(graph_seed, "graph-level seed (Graph.seed)")
    if op_seed is not None:
        op_seed = _checks.check_int(op_seed, "seed")
    if graph_seed is not None:
        if op_seed is None:
            op_seed = len(g._ops)  # TensorFlow 1 takes the graph's last op id
        seeds: tuple[int | None, int | None] = (
            _truncate_seed(graph_seed),
            _truncate_seed(op_seed),
        )
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, _truncate_seed(op_seed))
    else:
        return None, None
    if seeds == (0, 0):
        return 0, _MAXINT32
    return seeds


# -- op definitions -------------------------------------------------------------------------------

_SEED_ATTRS = {"seed": Attr("int", 0), "seed2": Attr("int", 0)}


def _output_shape(ctx: ShapeContext) -> Shape:
    """The shape given by input 0 (an integer vector, partly known values allowed)."""
    rank = ctx.rank(0)
    if rank is not None and rank != 1:
        raise ctx.error(f"Shape must be rank 1 but is rank {rank}")
    shape = ctx.shape_value(0)
    for d in shape or ():
        if d is not None and d < 0:
            raise ctx.error(f"Dimension {d} must be >= 0")
    if shape is not None:
        _checks.shape_product([d for d in shape if d is not None], "shape", op=ctx.op.type)
    return shape


def _float_output_shape(ctx: ShapeContext) -> Shape:
    dtype = ctx.attrs["dtype"]
    if dtype not in FLOATS:
        raise TypeError(
            f"Value passed to parameter 'dtype' of '{ctx.op.type}' Op '{ctx.name}' has DataType "
            f"{dtype.name} not in list of allowed values: float16, float32, float64"
        )
    return _output_shape(ctx)


def _float_random_op(type_: str) -> OpDef:
    return OpDef(
        type_,
        inputs=["shape: T"],
        outputs=["output: dtype"],
        attrs={"dtype": Attr("type"), **_SEED_ATTRS},
        types={"T": INDEX},
        shape=_float_output_shape,
        not_differentiable=True,
        stateful=True,
    )


_RANDOM_UNIFORM = _float_random_op("RandomUniform")
_RANDOM_STANDARD_NORMAL = _float_random_op("RandomStandardNormal")
_TRUNCATED_NORMAL = _float_random_op("TruncatedNormal")


def _uniform_int_shape(ctx: ShapeContext) -> Shape:
    for i, what in ((1, "minval"), (2, "maxval")):
        r = ctx.rank(i)
        if r is not None and r != 0:
            raise ctx.error(f"Shape must be rank 0 but is rank {r} ({what} must be a scalar)")
    return _output_shape(ctx)


_RANDOM_UNIFORM_INT = OpDef(
    "RandomUniformInt",
    inputs=["shape: T", "minval: Tout", "maxval: Tout"],
    outputs=["output: Tout"],
    attrs=dict(_SEED_ATTRS),
    types={"T": INDEX, "Tout": INDEX},
    shape=_uniform_int_shape,
    not_differentiable=True,
    stateful=True,
)

_RANDOM_SHUFFLE = OpDef(
    "RandomShuffle",
    inputs=["value: T"],
    outputs=["output: T"],
    attrs=dict(_SEED_ATTRS),
    types={"T": ANY},
    shape=same_shape,
    not_differentiable=True,
    stateful=True,
)


def _multinomial_shape(ctx: ShapeContext) -> Shape:
    if ctx.attrs["output_dtype"] not in INDEX:
        raise TypeError(
            f"Value passed to parameter 'output_dtype' of 'Multinomial' Op '{ctx.name}' has "
            f"DataType {ctx.attrs['output_dtype'].name} not in list of allowed values: int32, "
            "int64"
        )
    logits = ctx.shape(0)
    if logits is not None and len(logits) != 2:
        raise ctx.error(f"Shape must be rank 2 but is rank {len(logits)}")
    r = ctx.rank(1)
    if r is not None and r != 0:
        raise ctx.error(f"Shape must be rank 0 but is rank {r}")
    v = ctx.value(1)
    samples = None if v is None else int(v)
    if samples is not None and samples < 0:
        raise ctx.error(
            f"Dimension size, given by scalar input 1, must be non-negative but is {samples}"
        )
    return (None if logits is None else logits[0], samples)


_MULTINOMIAL = OpDef(
    "Multinomial",
    inputs=["logits: T", "num_samples: int32"],
    outputs=["output: output_dtype"],
    attrs={**_SEED_ATTRS, "output_dtype": Attr("type", int64)},
    types={"T": REALS},
    shape=_multinomial_shape,
    not_differentiable=True,
    stateful=True,
)


# -- public functions ----------------------------------------------------------------------------


def _is_python_int(value: Any, target: int) -> bool:
    return (
        isinstance(value, (int, np.integer))
        and not isinstance(value, (bool, np.bool_))
        and value == target
    )


def _float_dtype(dtype: Any, fn: str) -> DType:
    dt = as_dtype(dtype)
    if dt not in FLOATS:
        raise TypeError(f"{fn}: dtype must be float16, float32 or float64, got {dt.name}")
    return dt


def _normal_like(
    op_def: OpDef,
    default_name: str,
    shape: Any,
    mean: Any,
    stddev: Any,
    dtype: Any,
    seed: int | None,
    name: str | None,
) -> Tensor:
    dt = _float_dtype(dtype, default_name)
    with name_scope(_checks.check_name(name, default_name)) as scope:
        shape_t = _shape_tensor(shape)
        unit = _is_unit(mean, 0) and _is_unit(stddev, 1)
        seed1, seed2 = get_seed(seed)
        if unit:
            return op_def(shape_t, dtype=dt, seed=seed1, seed2=seed2, name=scope)  # type: ignore[no-any-return]
        mean_t = convert_to_tensor(mean, dtype=dt, name="mean")
        stddev_t = convert_to_tensor(stddev, dtype=dt, name="stddev")
        rnd = op_def(shape_t, dtype=dt, seed=seed1, seed2=seed2)
        return add(multiply(rnd, stddev_t, name="mul"), mean_t, name=scope)


def _is_unit(value: Any, target: int) -> bool:
    """``value`` is the Python (or NumPy) number ``target`` itself, so multiplying by it or adding
    it changes nothing and the op can be left out."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        return False
    return bool(value == target)


def _shape_tensor(shape: Any) -> Any:
    """A shape argument as the op's input: a TensorShape as its (fully known) list of sizes;
    anything else (a list, a tuple, an array, a tensor) as is, checked by the op."""
    if isinstance(shape, TensorShape):
        if not shape.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {shape} to a Tensor.")
        return shape.as_list()
    return shape


def random_normal(
    shape: Any,
    mean: Any = 0.0,
    stddev: Any = 1.0,
    dtype: Any = float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Values from a normal distribution (``RandomStandardNormal`` scaled by ``stddev`` and
    shifted by ``mean``).

    Parameters
    ----------
    shape : list of int, TensorShape or 1-D integer tensor
        The output shape.
    mean, stddev : float or scalar tensor
        The distribution's mean and standard deviation (of ``dtype``).
    dtype : DType
        float16, float32 or float64.
    seed : int, optional
        The op-level seed (see :func:`get_seed`).
    name : str, optional

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     s.run(ow.random_normal([2, 3], mean=5.0, seed=1)).shape
    (2, 3)
    """
    return _normal_like(
        _RANDOM_STANDARD_NORMAL, "random_normal", shape, mean, stddev, dtype, seed, name
    )


def truncated_normal(
    shape: Any,
    mean: Any = 0.0,
    stddev: Any = 1.0,
    dtype: Any = float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Values from a normal distribution truncated at two standard deviations: values farther
    than ``2 * stddev`` from ``mean`` are drawn again (``TruncatedNormal``).

    The result's standard deviation is about ``0.88 * stddev`` (0.87962566103423978).
    Arguments as :func:`random_normal`.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     x = s.run(ow.truncated_normal([1000], stddev=0.5, seed=1))
    >>> bool(abs(x).max() < 1.0)
    True
    """
    return _normal_like(
        _TRUNCATED_NORMAL, "truncated_normal", shape, mean, stddev, dtype, seed, name
    )


_UNIFORM_DTYPES = ("float16", "float32", "float64", "int32", "int64")


def random_uniform(
    shape: Any,
    minval: Any = 0,
    maxval: Any = None,
    dtype: Any = float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """Values from a uniform distribution on ``[minval, maxval)``.

    Floats default to ``[0, 1)`` (``RandomUniform`` scaled and shifted); integer dtypes
    (``RandomUniformInt``) need ``maxval``, and ``minval < maxval`` is checked when the op runs.
    Integers are very slightly biased unless ``maxval - minval`` is a power of two, as in
    TensorFlow.

    Parameters
    ----------
    shape : list of int, TensorShape or 1-D integer tensor
    minval, maxval : number or scalar tensor
    dtype : DType
        float16, float32, float64, int32 or int64.
    seed : int, optional
        The op-level seed (see :func:`get_seed`).
    name : str, optional

    Raises
    ------
    ValueError
        For another dtype, or an integer dtype without ``maxval``.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     x = s.run(ow.random_uniform([100], 3, 7, dtype=ow.int32, seed=2))
    >>> bool(x.min() >= 3 and x.max() < 7)
    True
    """
    dt = as_dtype(dtype)
    if dt.name not in _UNIFORM_DTYPES:
        raise ValueError(
            f"Argument `dtype` got invalid value {dt.name}. Accepted dtypes are "
            + ", ".join(_UNIFORM_DTYPES)
        )
    if maxval is None:
        if dt.is_integer:
            raise ValueError(f"Must specify maxval for integer dtype {dt.name}")
        maxval = 1
    with name_scope(_checks.check_name(name, "random_uniform")) as scope:
        shape_t = _shape_tensor(shape)
        min_zero = _is_python_int(minval, 0) and not dt.is_integer
        max_one = _is_python_int(maxval, 1) and not dt.is_integer
        min_t = minval if min_zero else convert_to_tensor(minval, dtype=dt, name="min")
        max_t = maxval if max_one else convert_to_tensor(maxval, dtype=dt, name="max")
        seed1, seed2 = get_seed(seed)
        if dt.is_integer:
            return _RANDOM_UNIFORM_INT(  # type: ignore[no-any-return]
                shape_t, min_t, max_t, seed=seed1, seed2=seed2, name=scope
            )
        if min_zero and max_one:
            return _RANDOM_UNIFORM(shape_t, dtype=dt, seed=seed1, seed2=seed2, name=scope)  # type: ignore[no-any-return]
        rnd = _RANDOM_UNIFORM(shape_t, dtype=dt, seed=seed1, seed2=seed2)
        if min_zero:
            return multiply(rnd, max_t, name=scope)
        width = subtract(max_t, min_t, name="sub")
        return add(multiply(rnd, width, name="mul"), min_t, name=scope)


def random_shuffle(value: TensorLike, seed: int | None = None, name: str | None = None) -> Tensor:
    """``value`` with its first dimension randomly permuted (``RandomShuffle``); a scalar or a
    tensor with one row comes back unchanged.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     sorted(s.run(ow.random_shuffle([1, 2, 3, 4], seed=3)).tolist())
    [1, 2, 3, 4]
    """
    seed1, seed2 = get_seed(seed)
    return _RANDOM_SHUFFLE(value, seed=seed1, seed2=seed2, name=name)  # type: ignore[no-any-return]


def _multinomial_impl(logits: Any, num_samples: Any, dtype: Any, seed: int | None) -> Tensor:
    logits = convert_to_tensor(logits, name="logits")
    dt = as_dtype(dtype) if dtype is not None else int64
    if dt not in (int32, int64):
        raise ValueError(
            f"Argument `dtype` got invalid value {dt.name}. Accepted dtypes are int32, int64."
        )
    seed1, seed2 = get_seed(seed)
    return _MULTINOMIAL(  # type: ignore[no-any-return]
        logits, num_samples, seed=seed1, seed2=seed2, output_dtype=dt
    )


def multinomial(
    logits: TensorLike,
    num_samples: Any,
    seed: int | None = None,
    name: str | None = None,
    output_dtype: Any = None,
) -> Tensor:
    """Samples from categorical distributions (``Multinomial``): row ``i`` of the result holds
    ``num_samples`` class indices drawn with probabilities ``softmax(logits[i])``.

    Parameters
    ----------
    logits : 2-D tensor ``[batch_size, num_classes]``
        Unnormalised log-probabilities; non-finite entries have probability 0.
    num_samples : int or int32 scalar tensor
    seed : int, optional
        The op-level seed (see :func:`get_seed`).
    name : str, optional
    output_dtype : DType, optional
        int32 or int64 (the default).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     s.run(ow.multinomial([[0.0, -1e9]], 3, seed=1)).tolist()
    [[0, 0, 0]]
    """
    with name_scope(_checks.check_name(name, "multinomial")):
        return _multinomial_impl(logits, num_samples, output_dtype, seed)


def categorical(
    logits: TensorLike,
    num_samples: Any,
    dtype: Any = None,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """``tf.random.categorical``: :func:`multinomial` with the output dtype called ``dtype``.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     ow.random.categorical([[1.0, 2.0]], 4).shape
    TensorShape([Dimension(1), Dimension(4)])
    """
    with name_scope(_checks.check_name(name, "categorical")):
        return _multinomial_impl(logits, num_samples, dtype, seed)


# -- dropout -------------------------------------------------------------------------------------


def dropout(
    x: TensorLike,
    keep_prob: Any = None,
    noise_shape: Any = None,
    seed: int | None = None,
    name: str | None = None,
    rate: Any = None,
) -> Tensor:
    """``tf.nn.dropout`` of TensorFlow 1: each element of ``x`` is zeroed with probability
    ``rate`` (``= 1 - keep_prob``), the others scaled by ``1 / (1 - rate)``, so the expected sum
    is unchanged.

    Give exactly one of ``keep_prob`` (TensorFlow 1's argument) and ``rate``; either may be a
    Python number or a scalar tensor (a placeholder, to switch dropout off at evaluation). A
    Python ``keep_prob`` of 1 (``rate`` 0) returns ``x`` itself. The mask is drawn once per run;
    the gradient is the incoming gradient where the mask keeps, times the scale.

    Parameters
    ----------
    x : floating tensor
    keep_prob : float or scalar tensor, optional
        Probability of keeping each element, in ``(0, 1]``.
    noise_shape : 1-D integer tensor or list, optional
        The shape of the random keep/drop mask, broadcast against ``x``: a dimension of 1 makes
        the same decision along that dimension (``[k, 1, 1, n]`` drops whole feature maps). A
        ``None`` dimension takes ``x``'s size.
    seed : int, optional
        The op-level seed (see :func:`get_seed`).
    name : str, optional
    rate : float or scalar tensor, optional
        Probability of dropping each element, in ``[0, 1)``.

    Raises
    ------
    ValueError
        Both or neither of ``keep_prob`` / ``rate``; a Python rate outside ``[0, 1)``; a
        non-floating ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     y = s.run(ow.nn.dropout(np.ones(1000, np.float32), keep_prob=0.5, seed=1))
    >>> sorted(set(y.tolist()))
    [0.0, 2.0]
    """
    try:
        rate_from_keep_prob = 1.0 - keep_prob if keep_prob is not None else None
    except TypeError:
        raise ValueError(
            "`keep_prob` must be a floating point number or Tensor. Received: "
            f"keep_prob={_checks._short(keep_prob)}"
        ) from None
    if keep_prob is not None and rate is not None:
        raise ValueError("Cannot specify both 'keep_prob' and 'rate'.")
    if rate is None:
        rate = rate_from_keep_prob
    if rate is None:
        raise ValueError("`rate` must be provided. Received: rate=None")
    return _dropout(x, rate, noise_shape, seed, name)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _dropout(x: Any, rate: Any, noise_shape: Any, seed: int | None, name: str | None) -> Tensor:
    with name_scope(_checks.check_name(name, "dropout")) as scope:
        number = _is_number(rate)
        if number and not 0 <= rate < 1:
            raise ValueError(
                f"`rate` must be a scalar tensor or a float in the range [0, 1). Received: "
                f"rate={rate}"
            )
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError(
                "`x.dtype` must be a floating point tensor as `x` will be scaled. Received: "
                f"x_dtype={x.dtype.name}"
            )
        if number and rate == 0:
            return x  # type: ignore[no-any-return]
        if number:
            scale = convert_to_tensor(1.0 / (1.0 - float(rate)), dtype=x.dtype)
            kept = multiply(x, scale)
        elif isinstance(rate, Tensor) or hasattr(rate, "_as_tensor"):
            rate = convert_to_tensor(rate)
            if rate._shape is not None and len(rate._shape) != 0:
                raise ValueError(
                    f"`rate` must be a scalar tensor, got shape {rate.shape} ({rate.name})"
                )
            if rate.dtype is not x.dtype:
                if not rate.dtype.is_floating:
                    raise ValueError(
                        "`x.dtype` must be compatible with `rate.dtype`. Received: "
                        f"x.dtype={x.dtype.name} and rate.dtype={rate.dtype.name}"
                    )
                rate = cast(rate, x.dtype, name="rate")
            one = convert_to_tensor(1, dtype=x.dtype)
            kept = realdiv(x, subtract(one, rate))
        else:
            raise ValueError(
                f"`rate` must be a scalar or scalar tensor. Received: rate={_checks._short(rate)}"
            )
        random_tensor = random_uniform(_noise_shape(x, noise_shape), seed=seed, dtype=x.dtype)
        keep = greater_equal(random_tensor, rate)
        zero = convert_to_tensor(0, dtype=x.dtype)
        out: Tensor = select_v2(keep, kept, zero, name=scope)
        out.set_shape(x.shape)
        return out


def _noise_shape(x: Tensor, noise_shape: Any) -> Any:
    """TensorFlow's ``_get_noise_shape``: ``shape(x)`` by default; a static noise shape of
    ``x``'s rank takes ``x``'s known sizes where it says None."""
    if noise_shape is None:
        return shape_of(x)
    if isinstance(noise_shape, Tensor) or hasattr(noise_shape, "_as_tensor"):
        return noise_shape
    if isinstance(noise_shape, TensorShape):
        dims: list[Any] = noise_shape.as_list() if noise_shape.ndims is not None else []
    elif isinstance(noise_shape, (list, tuple)):
        dims = list(noise_shape)
    else:
        return noise_shape  # an array, or something the op will reject
    if not any(d is None or hasattr(d, "value") for d in dims):
        return noise_shape
    dims = [getattr(d, "value", d) for d in dims]
    if x._shape is not None and len(x._shape) == len(dims):
        dims = [xd if d is None else d for d, xd in zip(dims, x._shape, strict=True)]
    if any(d is None for d in dims):
        raise ValueError(
            f"Cannot convert a partially known noise_shape {dims} to a Tensor (x has shape "
            f"{x.shape})."
        )
    return dims
