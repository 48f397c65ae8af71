"""``opweave.layers``: TensorFlow 1's ``tf.layers`` functions.

:func:`dense` and :func:`conv2d` make their variables (``<name>/kernel``, ``<name>/bias``) with
:func:`~opweave.get_variable` inside ``variable_scope(name, default_name="dense")`` (or
``"conv2d"``), so they are named, shared (``reuse=True`` / ``AUTO_REUSE``) and regularized as in
TensorFlow 1: the first unnamed dense layer holds ``dense/kernel:0``, the second
``dense_1/kernel:0``. :func:`max_pooling2d`, :func:`average_pooling2d` and :func:`dropout` are
the matching :mod:`opweave.nn` ops with the layers' argument names.

:func:`flatten` is TensorFlow's ``tf.layers.flatten``: the batch dimension kept, the rest
flattened, its size known statically whenever the inner dimensions are (a convolution stack's
usual ``tf.reshape(h, [-1, 7 * 7 * 64])`` idiom works as well).

>>> import opweave as ow
>>> with ow.Graph().as_default():
...     h = ow.placeholder(ow.float32, (None, 7, 7, 64))
...     ow.layers.flatten(h).shape
TensorShape([Dimension(None), Dimension(3136)])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .framework import GraphKeys, Tensor, get_default_graph, name_scope
from .ops import _checks
from .ops._op_def import convert_to_tensor, public
from .ops.array_ops import cast, expand_dims, identity, reshape, shape, stack, transpose
from .ops.init_ops import zeros_initializer
from .ops.logic_ops import where
from .ops.math_ops import matmul, truediv
from .ops.nn_conv import avg_pool, max_pool
from .ops.nn_conv import conv2d as _nn_conv2d
from .ops.nn_ops import bias_add
from .ops.random_ops import dropout as _nn_dropout
from .ops.variable_scopes import get_variable, variable_scope

__all__ = [
    "average_pooling2d",
    "conv2d",
    "dense",
    "dropout",
    "flatten",
    "max_pooling2d",
]


@public
def flatten(inputs: Any, name: str | None = None, data_format: str = "channels_last") -> Tensor:
    """``inputs`` reshaped to ``[batch, -1]`` (a 1-D input becomes ``[batch, 1]``).

    ``data_format="channels_first"`` moves the channels last before flattening, as TensorFlow
    does, so the order of the flattened values does not depend on the layout.

    >>> import numpy as np
    >>> import opweave as ow
    >>> ow.kernels.flatten(np.zeros((2, 3, 4))).shape
    (2, 12)
    """
    fmt = _checks.check_string(
        data_format, "data_format", op="flatten", allowed=("channels_last", "channels_first")
    )
    x = convert_to_tensor(inputs)
    dims = _static_shape(x)
    if dims is not None and len(dims) == 1:
        return expand_dims(x, 1, name=name)
    if fmt == "channels_first" and dims is not None and len(dims) > 2:
        x = transpose(x, [0, *range(2, len(dims)), 1])
        dims = [dims[0], *dims[2:], dims[1]]
    inner = [] if dims is None else [d for d in dims[1:] if d is not None]
    if dims is not None and len(inner) == len(dims) - 1 and math.prod(inner) > 0:
        return reshape(x, [-1, math.prod(inner)], name=name)
    return reshape(x, stack([shape(x)[0], -1]), name=name)


def _static_shape(x: Any) -> list[int | None] | None:
    if isinstance(x, Tensor):
        return None if x._shape is None else list(x._shape)
    return [int(d) for d in x.shape]


#: The bias initializer by default (TensorFlow's signatures hold one ``zeros_initializer()``).
_ZEROS = zeros_initializer()


def _activity_regularization(outputs: Tensor, regularizer: Callable[[Any], Any] | None) -> None:
    """TensorFlow 1.15's layers: the regularizer's value on the outputs, divided by the batch
    size (so that its strength does not depend on it), is a regularization loss."""
    if regularizer is None:
        return
    with name_scope("ActivityRegularizer"):
        loss = regularizer(outputs)
        if loss is None:
            return
        loss = convert_to_tensor(loss)
        batch = cast(shape(outputs)[0], loss.dtype)
        loss = truediv(loss, batch)
    get_default_graph().add_to_collection(GraphKeys.REGULARIZATION_LOSSES, loss)


def _last_axis_matmul(x: Tensor, kernel: Any) -> Tensor:
    """``tensordot(x, kernel, [[-1], [0]])``: a matrix product over the last axis of ``x``."""
    dims = x.get_shape().as_list() if x.get_shape().ndims is not None else None
    if dims is not None and len(dims) == 2:
        return matmul(x, kernel)
    if dims is None:
        raise ValueError(f"dense: the rank of the inputs must be known, got {x.name}")
    units = int(kernel.get_shape().as_list()[-1])
    k = dims[-1]
    flat = reshape(x, [-1, k if k is not None else shape(x)[-1]], name="Tensordot/Reshape")
    product = matmul(flat, kernel, name="Tensordot/MatMul")
    outer: list[Any] = [d if d is not None else shape(x)[i] for i, d in enumerate(dims[:-1])]
    if all(isinstance(d, int) for d in outer):
        out_shape: Any = [*outer, units]
    else:
        out_shape = stack([*outer, units])
    return reshape(product, out_shape, name="Tensordot")


def _check_units(value: Any, what: str, op: str) -> int:
    n = _checks.check_int(value, what, op=op)
    if n <= 0:
        raise ValueError(f"{op}: {what} must be a positive integer, got {value!r}")
    return n


def dense(
    inputs: Any,
    units: int,
    activation: Callable[[Any], Any] | None = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = _ZEROS,
    kernel_regularizer: Callable[[Any], Any] | None = None,
    bias_regularizer: Callable[[Any], Any] | None = None,
    activity_regularizer: Callable[[Any], Any] | None = None,
    kernel_constraint: Callable[[Any], Any] | None = None,
    bias_constraint: Callable[[Any], Any] | None = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """A fully connected layer: ``activation(inputs @ kernel + bias)``.

    Makes (or, with ``reuse``, finds) the variables ``<scope>/kernel`` of shape ``[in, units]``
    and ``<scope>/bias`` of shape ``[units]`` inside ``variable_scope(name,
    default_name="dense", reuse=reuse)``. Inputs of rank > 2 are multiplied over their last
    axis (TensorFlow's ``tensordot``): ``[batch, t, in]`` gives ``[batch, t, units]``.

    Parameters
    ----------
    inputs : float tensor ``[..., in]``
        The last dimension must be known.
    units : int
        The number of outputs.
    activation : callable, optional
        Applied to the result (``opweave.nn.relu``, ...); None: linear.
    use_bias : bool, default True
    kernel_initializer : initializer, optional
        Default: the variable scope's, else ``glorot_uniform_initializer()``.
    bias_initializer : initializer, default ``zeros_initializer()``
    kernel_regularizer, bias_regularizer : callable, optional
        Their values on the new variables go to ``GraphKeys.REGULARIZATION_LOSSES``.
    activity_regularizer : callable, optional
        Its value on the outputs, divided by the batch size (as TensorFlow 1.15's layers), goes
        to ``GraphKeys.REGULARIZATION_LOSSES``.
    kernel_constraint, bias_constraint : callable, optional
        As for :func:`~opweave.get_variable`.
    trainable : bool, default True
        Whether the variables are in ``GraphKeys.TRAINABLE_VARIABLES``.
    name : str, optional
        The variable scope; None: ``dense``, ``dense_1``, ...
    reuse : bool or AUTO_REUSE, optional
        Reuse the variables of an earlier layer of the same ``name``.

    Returns
    -------
    Tensor
        ``[..., units]``, of the inputs' dtype.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     x = ow.placeholder(ow.float32, [None, 3])
    ...     h = ow.layers.dense(x, 4, activation=ow.nn.relu)
    ...     y = ow.layers.dense(h, 2)
    ...     print(y.shape, [v.name for v in ow.trainable_variables()])
    (?, 2) ['dense/kernel:0', 'dense/bias:0', 'dense_1/kernel:0', 'dense_1/bias:0']
    """
    n = _check_units(units, "units", "dense")
    with variable_scope(name, default_name="dense", values=[inputs], reuse=reuse):
        x = convert_to_tensor(inputs)
        dims = x.get_shape().as_list() if x.get_shape().ndims is not None else None
        if dims is None or len(dims) < 2 or dims[-1] is None:
            raise ValueError(
                "The last dimension of the inputs to `Dense` should be defined. Found `None`."
                if dims is not None and len(dims) >= 2
                else f"Input 0 of layer dense is incompatible with the layer: expected "
                f"min_ndim=2, found {x.get_shape()} ({x.name})"
            )
        dtype = x.dtype.base_dtype
        kernel = get_variable(
            "kernel",
            [dims[-1], n],
            dtype=dtype,
            initializer=kernel_initializer,
            regularizer=kernel_regularizer,
            trainable=trainable,
            constraint=kernel_constraint,
        )
        outputs = _last_axis_matmul(x, kernel)
        if use_bias:
            bias = get_variable(
                "bias",
                [n],
                dtype=dtype,
                initializer=bias_initializer,
                regularizer=bias_regularizer,
                trainable=trainable,
                constraint=bias_constraint,
            )
            outputs = bias_add(outputs, bias)
        if activation is not None:
            outputs = activation(outputs)
        _activity_regularization(outputs, activity_regularizer)
        return outputs


_DATA_FORMATS = {"channels_last": "NHWC", "channels_first": "NCHW"}


def _pair(value: Any, what: str, op: str) -> list[int]:
    """An int or a pair of ints as a pair (TensorFlow's ``normalize_tuple``)."""
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(
                f"{op}: the `{what}` argument must be a tuple of 2 integers, got {value!r}"
            )
        return [_check_units(v, what, op) for v in value]
    v = _check_units(value, what, op)
    return [v, v]


def _padding(padding: Any, op: str) -> str:
    p = _checks.check_string(padding, "padding", op=op, allowed=("valid", "same", "VALID", "SAME"))
    return p.upper()


def _data_format(data_format: Any, op: str) -> str:
    fmt = _checks.check_string(
        data_format, "data_format", op=op, allowed=("channels_last", "channels_first")
    )
    return _DATA_FORMATS[fmt]


def _spatial4(pair: list[int], fmt: str) -> list[int]:
    return [1, *pair, 1] if fmt == "NHWC" else [1, 1, *pair]


def conv2d(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str = "channels_last",
    dilation_rate: Any = (1, 1),
    activation: Callable[[Any], Any] | None = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = _ZEROS,
    kernel_regularizer: Callable[[Any], Any] | None = None,
    bias_regularizer: Callable[[Any], Any] | None = None,
    activity_regularizer: Callable[[Any], Any] | None = None,
    kernel_constraint: Callable[[Any], Any] | None = None,
    bias_constraint: Callable[[Any], Any] | None = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Tensor:
    """A 2-D convolution layer: ``activation(conv2d(inputs, kernel) + bias)``.

    Makes (or reuses) ``<scope>/kernel`` of shape ``[kh, kw, in_channels, filters]`` and
    ``<scope>/bias`` of shape ``[filters]`` inside ``variable_scope(name,
    default_name="conv2d", reuse=reuse)``, and applies :func:`opweave.nn.conv2d` and
    :func:`opweave.nn.bias_add`.

    Parameters
    ----------
    inputs : float tensor
        ``[batch, height, width, channels]`` (``channels_last``) or ``[batch, channels,
        height, width]`` (``channels_first``); the channels must be known.
    filters : int
        The number of output channels.
    kernel_size, strides, dilation_rate : int or pair of ints
    padding : {"valid", "same"}
    data_format : {"channels_last", "channels_first"}
    activation, use_bias, trainable, name, reuse
        As for :func:`dense` (the default scope name is ``conv2d``).
    kernel_initializer, bias_initializer, kernel_regularizer, bias_regularizer
        As for :func:`dense`.
    activity_regularizer, kernel_constraint, bias_constraint
        As for :func:`dense`.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     x = ow.placeholder(ow.float32, [None, 28, 28, 1])
    ...     h = ow.layers.conv2d(x, 32, 5, padding="same", activation=ow.nn.relu)
    ...     print(h.shape, ow.trainable_variables()[0].shape)
    (?, 28, 28, 32) (5, 5, 1, 32)
    """
    op = "conv2d"
    n = _check_units(filters, "filters", op)
    size = _pair(kernel_size, "kernel_size", op)
    stride = _pair(strides, "strides", op)
    dilation = _pair(dilation_rate, "dilation_rate", op)
    pad = _padding(padding, op)
    fmt = _data_format(data_format, op)
    with variable_scope(name, default_name="conv2d", values=[inputs], reuse=reuse):
        x = convert_to_tensor(inputs)
        dims = x.get_shape().as_list() if x.get_shape().ndims is not None else None
        if dims is None or len(dims) != 4:
            raise ValueError(
                f"Input 0 of layer conv2d is incompatible with the layer: expected ndim=4, "
                f"found {x.get_shape()} ({x.name})"
            )
        channels = dims[3] if fmt == "NHWC" else dims[1]
        if channels is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        dtype = x.dtype.base_dtype
        kernel = get_variable(
            "kernel",
            [*size, channels, n],
            dtype=dtype,
            initializer=kernel_initializer,
            regularizer=kernel_regularizer,
            trainable=trainable,
            constraint=kernel_constraint,
        )
        outputs = _nn_conv2d(
            x,
            kernel,
            strides=_spatial4(stride, fmt),
            padding=pad,
            data_format=fmt,
            dilations=_spatial4(dilation, fmt),
            name="Conv2D",
        )
        if use_bias:
            bias = get_variable(
                "bias",
                [n],
                dtype=dtype,
                initializer=bias_initializer,
                regularizer=bias_regularizer,
                trainable=trainable,
                constraint=bias_constraint,
            )
            outputs = bias_add(outputs, bias, data_format=fmt)
        if activation is not None:
            outputs = activation(outputs)
        _activity_regularization(outputs, activity_regularizer)
        return outputs


def _pooling(
    fn: Callable[..., Tensor],
    default: str,
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str,
    data_format: str,
    name: str | None,
) -> Tensor:
    size = _pair(pool_size, "pool_size", default)
    stride = _pair(strides, "strides", default)
    pad = _padding(padding, default)
    fmt = _data_format(data_format, default)
    with name_scope(_checks.check_name(name, default)):
        return fn(
            inputs,
            ksize=_spatial4(size, fmt),
            strides=_spatial4(stride, fmt),
            padding=pad,
            data_format=fmt,
        )


def max_pooling2d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """2-D max pooling (:func:`opweave.nn.max_pool` with the layers' argument names).

    Parameters
    ----------
    inputs : tensor, rank 4
    pool_size, strides : int or pair of ints
    padding : {"valid", "same"}
    data_format : {"channels_last", "channels_first"}
    name : str, optional
        The name scope (default ``max_pooling2d``).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     x = ow.placeholder(ow.float32, [None, 28, 28, 8])
    ...     print(ow.layers.max_pooling2d(x, 2, 2).shape)
    (?, 14, 14, 8)
    """
    return _pooling(
        max_pool, "max_pooling2d", inputs, pool_size, strides, padding, data_format, name
    )


def average_pooling2d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Tensor:
    """2-D average pooling (:func:`opweave.nn.avg_pool` with the layers' argument names); with
    ``"same"`` padding only the cells inside the image are averaged.

    Parameters
    ----------
    inputs : tensor, rank 4
    pool_size, strides : int or pair of ints
    padding : {"valid", "same"}
    data_format : {"channels_last", "channels_first"}
    name : str, optional
        The name scope (default ``average_pooling2d``).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default():
    ...     x = ow.placeholder(ow.float32, [None, 5, 5, 3])
    ...     print(ow.layers.average_pooling2d(x, 2, 2, padding="same").shape)
    (?, 3, 3, 3)
    """
    return _pooling(
        avg_pool, "average_pooling2d", inputs, pool_size, strides, padding, data_format, name
    )


def dropout(
    inputs: Any,
    rate: Any = 0.5,
    noise_shape: Any = None,
    seed: int | None = None,
    training: Any = False,
    name: str | None = None,
) -> Tensor:
    """Dropout when ``training``: each element zeroed with probability ``rate``, the others
    scaled by ``1 / (1 - rate)`` (:func:`opweave.nn.dropout`); otherwise the inputs unchanged.

    Parameters
    ----------
    inputs : float tensor
    rate : float or scalar tensor, default 0.5
        The fraction of the inputs dropped.
    noise_shape : 1-D integer tensor or list, optional
        As for :func:`opweave.nn.dropout`.
    seed : int, optional
    training : bool or bool scalar tensor, default False
        A tensor (a ``placeholder_with_default(False, [])``, say) chooses at run time: both
        results are computed and one is selected (opweave has no ``tf.cond`` yet).
    name : str, optional
        The name scope (default ``dropout``).

    Examples
    --------
    >>> import numpy as np
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     x = np.ones(1000, np.float32)
    ...     print(sorted(set(s.run(ow.layers.dropout(x, 0.5, training=True, seed=1)).tolist())))
    ...     print(s.run(ow.layers.dropout(x, 0.5)).sum())
    [0.0, 2.0]
    1000.0
    """
    with name_scope(_checks.check_name(name, "dropout")):
        x = convert_to_tensor(inputs)
        if isinstance(training, Tensor) or hasattr(training, "_as_tensor"):
            cond = convert_to_tensor(training)
            if cond.dtype.name != "bool" or (
                cond.get_shape().ndims is not None and cond.get_shape().ndims != 0
            ):
                raise ValueError(
                    f"dropout: `training` must be a Python bool or a bool scalar tensor, got "
                    f"{cond.dtype.name} {cond.get_shape()} ({cond.name})"
                )
            dropped = _nn_dropout(x, noise_shape=noise_shape, seed=seed, rate=rate)
            return where(cond, dropped, x, name="cond")
        if _checks.check_bool(training, "training", op="dropout"):
            return _nn_dropout(x, noise_shape=noise_shape, seed=seed, rate=rate)
        return identity(x)
