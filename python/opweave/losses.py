"""``opweave.losses``: TensorFlow 1's ``tf.losses`` (``tf.compat.v1.losses``).

Each loss computes its per-element values, multiplies them by ``weights`` (a scalar, or a tensor
broadcastable to the losses, such as per-example weights), reduces them as ``reduction`` says
(:class:`Reduction`; by default the weighted sum divided by the number of non-zero weights),
adds the result to the ``loss_collection`` (``GraphKeys.LOSSES``) and returns it. As in
TensorFlow, the arithmetic is done in float32 and the result cast back to the losses' dtype.
:func:`get_total_loss` sums the collected losses and the regularization losses (those of
``get_variable(..., regularizer=...)`` and of the :mod:`opweave.layers` regularizers).

>>> import opweave as ow
>>> with ow.Graph().as_default(), ow.Session() as s:
...     loss = ow.losses.mean_squared_error([1.0, 2.0], [1.0, 4.0])
...     print(s.run(loss), len(ow.losses.get_losses()))
2.0 1
"""

from __future__ import annotations

from typing import Any

from .dtypes import float32
from .framework import GraphKeys, Tensor, get_collection, get_default_graph, name_scope
from .ops._op_def import convert_to_tensor
from .ops.array_ops import cast, ones_like, shape, size, squeeze, stop_gradient, zeros_like
from .ops.logic_ops import where
from .ops.math_ops import (
    abs,
    add,
    add_n,
    equal,
    minimum,
    multiply,
    reduce_sum,
    squared_difference,
    subtract,
    truediv,
)
from .ops.nn_losses import (
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    sparse_softmax_cross_entropy_with_logits,
)

__all__ = [
    "Reduction",
    "absolute_difference",
    "add_loss",
    "compute_weighted_loss",
    "get_losses",
    "get_regularization_loss",
    "get_regularization_losses",
    "get_total_loss",
    "huber_loss",
    "mean_squared_error",
    "sigmoid_cross_entropy",
    "softmax_cross_entropy",
    "sparse_softmax_cross_entropy",
]


class Reduction:
    """How a loss reduces its weighted per-element values (TensorFlow 1's constants).

    ``NONE``: no reduction (the weighted losses); ``SUM``: their sum; ``MEAN``: the sum divided
    by the sum of the weights; ``SUM_OVER_BATCH_SIZE``: divided by the number of elements;
    ``SUM_BY_NONZERO_WEIGHTS`` (the default; ``SUM_OVER_NONZERO_WEIGHTS`` is its other name):
    divided by the number of non-zero weights. A zero divisor gives 0.

    >>> Reduction.SUM_BY_NONZERO_WEIGHTS
    'weighted_sum_by_nonzero_weights'
    """

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple[str, ...]:
        """Every reduction."""
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key: Any) -> None:
        """Raise ValueError unless ``key`` is one of :meth:`all`."""
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Key should be one of {cls.all()}.")


def _scope(scope: str | None, default: str) -> Any:
    return name_scope(scope or default)


def _safe_div(total: Tensor, count: Any) -> Tensor:
    """``total / count``, 0 where ``count`` is 0 (TensorFlow's ``div_no_nan``)."""
    zero = equal(count, 0.0)
    safe = where(zero, ones_like(count), count)
    return where(zero, zeros_like(total), truediv(total, safe), name="value")


def _num_elements(losses: Tensor) -> Tensor:
    with name_scope("num_elements"):
        return cast(size(losses), losses.dtype, name="num_elements")


def _num_present(losses: Tensor, weights: Any) -> Tensor:
    """The number of losses with a non-zero weight (every loss for a non-zero Python weight)."""
    if isinstance(weights, (int, float)) and not isinstance(weights, bool) and weights != 0:
        return _num_elements(losses)
    with name_scope("num_present"):
        w = cast(weights, float32)
        present = where(equal(w, 0.0), zeros_like(w), ones_like(w))
        present = multiply(present, ones_like(losses))
        return reduce_sum(present)


def _assert_broadcastable(weights: Tensor, values: Tensor) -> None:
    """TensorFlow's rule, checked on the static shapes: weights are a scalar, or of the losses'
    rank with each dimension 1 or the losses' (``[batch]`` weights do not fit ``[batch, k]``
    losses: they need ``[batch, 1]``)."""
    ws, vs = weights.get_shape(), values.get_shape()
    if ws.ndims is None or vs.ndims is None or ws.ndims == 0:
        return
    wd, vd = ws.as_list(), vs.as_list()
    fits = len(wd) == len(vd) and all(
        w is None or v is None or w in (1, v) for w, v in zip(wd, vd, strict=True)
    )
    if not fits:
        raise ValueError(
            f"weights can not be broadcast to values. values.rank={len(vd)}. "
            f"weights.rank={len(wd)}. values.shape={vs}. weights.shape={ws}."
        )


def add_loss(loss: Tensor, loss_collection: str | None = GraphKeys.LOSSES) -> None:
    """Add ``loss`` to the collection ``loss_collection`` (nothing when it is None or empty)."""
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)


def compute_weighted_loss(
    losses: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """``losses * weights`` reduced as ``reduction`` says, added to ``loss_collection``.

    Parameters
    ----------
    losses : tensor
        The per-element losses.
    weights : float or tensor, default 1.0
        Broadcastable to ``losses`` (a scalar, or e.g. ``[batch]`` / ``[batch, 1]`` weights).
    scope : str, optional
        The name scope of the ops.
    loss_collection : str, default ``GraphKeys.LOSSES``
        None: the loss is not collected.
    reduction : str, default ``Reduction.SUM_BY_NONZERO_WEIGHTS``

    Returns
    -------
    Tensor
        A scalar, or the weighted losses for ``Reduction.NONE``; of the losses' dtype.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.losses.compute_weighted_loss([1.0, 2.0, 3.0], [1.0, 0.0, 1.0])))
    2.0
    """
    Reduction.validate(reduction)
    with _scope(scope, "weighted_loss"):
        losses_t = convert_to_tensor(losses)
        input_dtype = losses_t.dtype
        losses_t = cast(losses_t, float32)
        weights_t = cast(weights, float32)
        _assert_broadcastable(weights_t, losses_t)
        weighted = multiply(losses_t, weights_t)
        if reduction == Reduction.NONE:
            loss = weighted
        else:
            loss = reduce_sum(weighted)
            if reduction == Reduction.MEAN:
                loss = _safe_div(loss, reduce_sum(multiply(ones_like(losses_t), weights_t)))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_div(loss, _num_present(losses_t, weights))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_div(loss, _num_elements(losses_t))
        loss = cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


def _not_none(value: Any, what: str) -> None:
    if value is None:
        raise ValueError(f"Argument `{what}` must not be None.")


def _assert_compatible(a: Tensor, b: Tensor, what: str) -> None:
    if not a.get_shape().is_compatible_with(b.get_shape()):
        raise ValueError(f"Shapes {a.get_shape()} and {b.get_shape()} are incompatible ({what})")


def softmax_cross_entropy(
    onehot_labels: Any,
    logits: Any,
    weights: Any = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """The softmax cross-entropy of ``logits`` against ``onehot_labels``, weighted and reduced.

    ``label_smoothing`` > 0 moves the labels towards the uniform distribution:
    ``labels * (1 - label_smoothing) + label_smoothing / num_classes``. No gradient flows into
    the labels.

    Parameters
    ----------
    onehot_labels : tensor ``[batch, num_classes]``
    logits : float tensor ``[batch, num_classes]``
    weights : float or tensor, default 1.0
        A scalar or per-example ``[batch]`` weights.
    label_smoothing : float, default 0
    scope, loss_collection, reduction
        As for :func:`compute_weighted_loss`.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     loss = ow.losses.softmax_cross_entropy([[0.0, 1.0]], [[0.0, 0.0]])
    ...     print(round(float(s.run(loss)), 4))
    0.6931
    """
    _not_none(onehot_labels, "onehot_labels")
    _not_none(logits, "logits")
    with _scope(scope, "softmax_cross_entropy_loss") as sc:
        logits_t = convert_to_tensor(logits)
        labels = cast(onehot_labels, logits_t.dtype)
        _assert_compatible(logits_t, labels, "logits and onehot_labels")
        if label_smoothing > 0:
            num_classes = cast(shape(labels)[-1], logits_t.dtype)
            labels = add(
                multiply(labels, 1.0 - label_smoothing), truediv(label_smoothing, num_classes)
            )
        labels = stop_gradient(labels, name="labels_stop_gradient")
        losses = softmax_cross_entropy_with_logits_v2(
            labels=labels, logits=logits_t, name="xentropy"
        )
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction)


def _squeeze_last_if(t: Tensor, rank: int | None, want: int | None) -> Tensor:
    dims = t.get_shape().as_list() if t.get_shape().ndims is not None else None
    if (
        rank is not None
        and want is not None
        and rank == want + 1
        and dims
        and dims[-1] in (1, None)
    ):
        return squeeze(t, [-1])
    return t


def sparse_softmax_cross_entropy(
    labels: Any,
    logits: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """The softmax cross-entropy of ``logits`` against integer class ``labels``, weighted and
    reduced.

    Labels of shape ``[batch, 1]`` and weights of shape ``[batch, 1]`` are squeezed to
    ``[batch]`` first, as TensorFlow does.

    Parameters
    ----------
    labels : int32 or int64 tensor ``[batch]``
    logits : float tensor ``[batch, num_classes]``
    weights : float or tensor, default 1.0
    scope, loss_collection, reduction
        As for :func:`compute_weighted_loss`.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(round(float(s.run(ow.losses.sparse_softmax_cross_entropy([1], [[0.0, 0.0]]))), 4))
    0.6931
    """
    _not_none(labels, "labels")
    _not_none(logits, "logits")
    with _scope(scope, "sparse_softmax_cross_entropy_loss") as sc:
        logits_t = convert_to_tensor(logits)
        labels_t = convert_to_tensor(labels)
        l_rank = labels_t.get_shape().ndims
        p_rank = logits_t.get_shape().ndims
        if l_rank is not None and p_rank is not None and p_rank - l_rank == 0:
            labels_t = _squeeze_last_if(labels_t, l_rank, p_rank - 1)
        w = weights
        if isinstance(weights, Tensor) or not isinstance(weights, (int, float)):
            w = convert_to_tensor(weights)
            w_rank = w.get_shape().ndims
            l_rank = labels_t.get_shape().ndims
            if w_rank is not None and l_rank is not None and w_rank - l_rank == 1:
                w = squeeze(w, [-1])
        losses = sparse_softmax_cross_entropy_with_logits(
            labels=labels_t, logits=logits_t, name="xentropy"
        )
        return compute_weighted_loss(losses, w, sc, loss_collection, reduction)


def sigmoid_cross_entropy(
    multi_class_labels: Any,
    logits: Any,
    weights: Any = 1.0,
    label_smoothing: float = 0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """The sigmoid cross-entropy of ``logits`` against 0/1 ``multi_class_labels``, weighted and
    reduced.

    ``label_smoothing`` > 0 moves the labels towards 1/2:
    ``labels * (1 - label_smoothing) + 0.5 * label_smoothing``.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(round(float(s.run(ow.losses.sigmoid_cross_entropy([[1.0]], [[0.0]]))), 4))
    0.6931
    """
    _not_none(multi_class_labels, "multi_class_labels")
    _not_none(logits, "logits")
    with _scope(scope, "sigmoid_cross_entropy_loss") as sc:
        logits_t = convert_to_tensor(logits)
        labels = cast(multi_class_labels, logits_t.dtype)
        _assert_compatible(logits_t, labels, "logits and multi_class_labels")
        if label_smoothing > 0:
            labels = add(multiply(labels, 1 - label_smoothing), 0.5 * label_smoothing)
        losses = sigmoid_cross_entropy_with_logits(
            labels=labels, logits=logits_t, name="logistic_loss"
        )
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction)


def _regression_inputs(labels: Any, predictions: Any) -> tuple[Tensor, Tensor]:
    _not_none(labels, "labels")
    _not_none(predictions, "predictions")
    p = cast(predictions, float32)
    lab = cast(labels, float32)
    _assert_compatible(p, lab, "predictions and labels")
    return lab, p


def mean_squared_error(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """``(predictions - labels) ** 2``, weighted and reduced (in float32).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.losses.mean_squared_error([0.0, 0.0], [1.0, 3.0])))
    5.0
    """
    with _scope(scope, "mean_squared_error") as sc:
        lab, p = _regression_inputs(labels, predictions)
        losses = squared_difference(p, lab)
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction)


def absolute_difference(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """``|predictions - labels|``, weighted and reduced (in float32).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.losses.absolute_difference([0.0, 0.0], [1.0, -3.0])))
    2.0
    """
    with _scope(scope, "absolute_difference") as sc:
        lab, p = _regression_inputs(labels, predictions)
        losses = abs(subtract(p, lab))
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction)


def huber_loss(
    labels: Any,
    predictions: Any,
    weights: Any = 1.0,
    delta: float = 1.0,
    scope: str | None = None,
    loss_collection: str | None = GraphKeys.LOSSES,
    reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS,
) -> Tensor:
    """The Huber loss: ``0.5 * e**2`` for ``|e| <= delta``, ``delta * (|e| - 0.5 * delta)``
    beyond, with ``e = predictions - labels``; weighted and reduced (in float32).

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     print(s.run(ow.losses.huber_loss([0.0, 0.0], [0.5, 3.0])))
    1.3125
    """
    with _scope(scope, "huber_loss") as sc:
        lab, p = _regression_inputs(labels, predictions)
        abs_error = abs(subtract(p, lab))
        quadratic = minimum(abs_error, delta)
        linear = subtract(abs_error, quadratic)
        losses = add(multiply(0.5, multiply(quadratic, quadratic)), multiply(delta, linear))
        return compute_weighted_loss(losses, weights, sc, loss_collection, reduction)


def get_losses(scope: str | None = None, loss_collection: str = GraphKeys.LOSSES) -> list[Any]:
    """The losses in ``loss_collection`` (those whose name matches ``scope``, when given)."""
    return get_collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list[Any]:
    """The ``GraphKeys.REGULARIZATION_LOSSES`` collection (filtered by ``scope``)."""
    return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(
    scope: str | None = None, name: str = "total_regularization_loss"
) -> Tensor:
    """The sum of the regularization losses (0.0 when there are none)."""
    from .ops.array_ops import constant

    losses = get_regularization_losses(scope)
    if losses:
        return add_n(losses, name=name)
    return constant(0.0)


def get_total_loss(
    add_regularization_losses: bool = True, name: str = "total_loss", scope: str | None = None
) -> Tensor:
    """The sum of the collected losses, plus the regularization losses by default.

    Raises
    ------
    ValueError
        No losses were collected.

    Examples
    --------
    >>> import opweave as ow
    >>> with ow.Graph().as_default(), ow.Session() as s:
    ...     _ = ow.losses.absolute_difference([0.0], [1.0])
    ...     _ = ow.losses.absolute_difference([0.0], [2.0])
    ...     print(s.run(ow.losses.get_total_loss()))
    3.0
    """
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    if not losses:
        raise ValueError("No losses found: the losses and regularization collections are empty")
    return add_n(losses, name=name)
