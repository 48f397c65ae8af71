"""The optimizers of opweave.train: a small program trained for a few hundred steps by each, against
a NumPy implementation of TensorFlow 1's update rules (loss curve and final values); their slots,
variables, global step and hyper-parameters as tensors; and TensorFlow 1's errors."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import opweave as ow
import pytest

# -- the program: least squares with a weight matrix and a bias ------------------------------------

RNG = np.random.default_rng(0)
X = RNG.standard_normal((16, 3))
# Noise keeps the minimum away from zero, so the curves compare relatively to the end; every
# weight starts far enough from its optimum that RMSProp (whose steps are about its learning rate
# each) does not reach it in STEPS steps, where its sign-like steps would amplify rounding.
Y = X @ np.array([[1.0, -2.0], [1.5, 1.2], [-1.0, 3.0]]) + np.array([0.9, -0.7])
Y += 0.3 * RNG.standard_normal(Y.shape)
W0 = np.array([[-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]]) + RNG.standard_normal((3, 2)) * 0.1
B0 = np.array([-1.0, 1.0])
STEPS = 300


def grads(w: np.ndarray, b: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[Any, ...]:
    """The loss mean((xw + b - y)^2) and its gradients, in the arrays' dtype."""
    err = x @ w + b - y
    n = err.size
    d = err * (2.0 / n)
    return float(np.mean(err * err)), x.T @ d, d.sum(axis=0)


class Rule:
    """One optimizer's update of one variable in NumPy: TensorFlow 1's formulas. As in
    TensorFlow, the hyper-parameters are float32 tensors cast to the variable's dtype, and Adam's
    beta powers are float32 variables."""

    def __init__(self, kind: str, **h: Any) -> None:
        self.kind, self.state, self.t = kind, {}, 0
        self.h = {k: np.float32(v) if isinstance(v, float) else v for k, v in h.items()}

    def step(self, key: str, var: np.ndarray, g: np.ndarray) -> np.ndarray:
        h, s, tp = self.h, self.state.setdefault(key, {}), var.dtype.type
        lr = tp(h["lr"])
        if self.kind == "sgd":
            return var - g * lr
        if self.kind == "momentum":
            a = s.get("a", np.zeros_like(var)) * tp(h["momentum"]) + g
            s["a"] = a
            if h.get("nesterov"):
                return var - (g * lr + a * tp(h["momentum"]) * lr)
            return var - a * lr
        if self.kind == "adam":
            b1, b2, eps = tp(h["beta1"]), tp(h["beta2"]), tp(h["epsilon"])
            b1p, b2p = tp(self.power(h["beta1"])), tp(self.power(h["beta2"]))
            alpha = lr * np.sqrt(tp(1) - b2p) / (tp(1) - b1p)
            m = s.get("m", np.zeros_like(var))
            v = s.get("v", np.zeros_like(var))
            m = m + (g - m) * (tp(1) - b1)
            v = v + (g * g - v) * (tp(1) - b2)
            s["m"], s["v"] = m, v
            return var - (m * alpha) / (np.sqrt(v) + eps)
        if self.kind == "rmsprop":
            rho, mom_c, eps = tp(h["decay"]), tp(h["momentum"]), tp(h["epsilon"])
            ms = s.get("ms", np.ones_like(var))
            ms = ms + (g * g - ms) * (tp(1) - rho)
            mom = s.get("mom", np.zeros_like(var))
            if h.get("centered"):
                mg = s.get("mg", np.zeros_like(var))
                mg = mg + (g - mg) * (tp(1) - rho)
                s["mg"] = mg
                mom = mom * mom_c + (g * lr) / np.sqrt(ms - mg * mg + eps)
            else:
                mom = mom * mom_c + (g * lr) / np.sqrt(ms + eps)
            s["ms"], s["mom"] = ms, mom
            return var - mom
        if self.kind == "adagrad":
            acc = s.get("acc", np.full_like(var, h["initial_accumulator_value"])) + g * g
            s["acc"] = acc
            return var - g * lr * (tp(1) / np.sqrt(acc))
        raise AssertionError(self.kind)

    def power(self, beta: np.float32) -> np.float32:
        """beta^(t+1) as the float32 variable TensorFlow multiplies by beta after each step."""
        p = beta
        for _ in range(self.t):
            p = np.float32(p * beta)
        return p


OPTIMIZERS: dict[str, tuple[Callable[[], Any], Rule]] = {
    "sgd": (lambda: ow.train.GradientDescentOptimizer(0.1), Rule("sgd", lr=0.1)),
    "momentum": (
        lambda: ow.train.MomentumOptimizer(0.05, 0.9),
        Rule("momentum", lr=0.05, momentum=0.9),
    ),
    "nesterov": (
        lambda: ow.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
        Rule("momentum", lr=0.05, momentum=0.9, nesterov=True),
    ),
    "adam": (
        lambda: ow.train.AdamOptimizer(0.05),
        Rule("adam", lr=0.05, beta1=0.9, beta2=0.999, epsilon=1e-8),
    ),
    "rmsprop": (
        lambda: ow.train.RMSPropOptimizer(0.002, momentum=0.5),
        Rule("rmsprop", lr=0.002, decay=0.9, momentum=0.5, epsilon=1e-10),
    ),
    "rmsprop_centered": (
        lambda: ow.train.RMSPropOptimizer(0.001, centered=True),
        Rule("rmsprop", lr=0.001, decay=0.9, momentum=0.0, epsilon=1e-10, centered=True),
    ),
    "adagrad": (
        lambda: ow.train.AdagradOptimizer(0.3),
        Rule("adagrad", lr=0.3, initial_accumulator_value=0.1),
    ),
}


def numpy_curve(rule: Rule, dtype: Any) -> tuple[list[float], np.ndarray, np.ndarray]:
    rule = copy.deepcopy(rule)  # a fresh state
    w, b = W0.astype(dtype), B0.astype(dtype)
    x, y = X.astype(dtype), Y.astype(dtype)
    losses = []
    for t in range(STEPS):
        rule.t = t
        loss, gw, gb = grads(w, b, x, y)
        losses.append(loss)
        w, b = rule.step("w", w, gw), rule.step("b", b, gb)
    return losses, w, b


def opweave_curve(make: Callable[[], Any], dtype: Any) -> tuple[list[float], Any, Any]:
    with ow.Graph().as_default():
        x = ow.placeholder(ow.as_dtype(dtype), [None, 3])
        y = ow.placeholder(ow.as_dtype(dtype), [None, 2])
        w = ow.Variable(W0.astype(dtype), name="w")
        b = ow.Variable(B0.astype(dtype), name="b")
        err = ow.matmul(x, w) + b - y
        loss = ow.reduce_mean(err * err)
        train = make().minimize(loss)
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            feed = {x: X.astype(dtype), y: Y.astype(dtype)}
            losses = [float(s.run([loss, train], feed)[0]) for _ in range(STEPS)]
            return losses, s.run(w), s.run(b)


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_loss_curve_follows_tensorflows_update_rules_in_float64(name: str) -> None:
    make, rule = OPTIMIZERS[name]
    want_losses, want_w, want_b = numpy_curve(rule, np.float64)
    losses, w, b = opweave_curve(make, np.float64)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-9)
    np.testing.assert_allclose(w, want_w, rtol=1e-9)
    np.testing.assert_allclose(b, want_b, rtol=1e-9)
    assert losses[-1] < 0.5 * losses[0]  # and it trains


@pytest.mark.parametrize("name", ["sgd", "adam", "rmsprop"])
def test_loss_curve_follows_in_float32(name: str) -> None:
    make, rule = OPTIMIZERS[name]
    want_losses, want_w, _ = numpy_curve(rule, np.float32)
    losses, w, _ = opweave_curve(make, np.float32)
    np.testing.assert_allclose(losses, want_losses, rtol=2e-4, atol=1e-6)
    np.testing.assert_allclose(w, want_w, rtol=2e-4, atol=1e-5)


# -- slots, variables, names ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "slots", "names"),
    [
        (
            lambda: ow.train.AdamOptimizer(),
            ["m", "v"],
            ["beta1_power:0", "beta2_power:0", "w/Adam:0", "w/Adam_1:0"],
        ),
        (lambda: ow.train.MomentumOptimizer(0.1, 0.9), ["momentum"], ["w/Momentum:0"]),
        (
            lambda: ow.train.RMSPropOptimizer(0.1),
            ["momentum", "rms"],
            ["w/RMSProp:0", "w/RMSProp_1:0"],
        ),
        (
            lambda: ow.train.RMSPropOptimizer(0.1, centered=True),
            ["mg", "momentum", "rms"],
            ["w/RMSProp:0", "w/RMSProp_1:0", "w/RMSProp_2:0"],
        ),
        (lambda: ow.train.AdagradOptimizer(0.1), ["accumulator"], ["w/Adagrad:0"]),
        (lambda: ow.train.GradientDescentOptimizer(0.1), [], []),
    ],
)
def test_slots_and_variables_have_tensorflows_names(
    make: Callable[[], Any], slots: list[str], names: list[str]
) -> None:
    with ow.Graph().as_default():
        w = ow.Variable([1.0, 2.0], name="w")
        opt = make()
        train = opt.minimize(ow.reduce_sum(w * w))
        assert opt.get_slot_names() == slots
        assert [v.name for v in opt.variables()] == names
        for slot in slots:
            s = opt.get_slot(w, slot)
            assert s is not None
            assert not s.trainable
            assert s in ow.global_variables()
            assert s.shape.as_list() == [2]
        assert opt.get_slot(w, "nonexistent") is None
        assert ow.trainable_variables() == [w]
        assert train in ow.get_collection(ow.GraphKeys.TRAIN_OP)
        assert train.name == opt.get_name()
        update_types = {op.type for op in ow.get_default_graph().get_operations()}
        assert any(t.startswith("Apply") for t in update_types)


def test_one_fused_update_op_per_variable() -> None:
    with ow.Graph().as_default() as g:
        w = ow.Variable(np.ones((4, 4), np.float32), name="w")
        b = ow.Variable(np.zeros(4, np.float32), name="b")
        ow.train.AdamOptimizer().minimize(ow.reduce_sum(ow.matmul(w, w) + b))
        applies = [op for op in g.get_operations() if op.type == "ApplyAdam"]
        assert sorted(op.name for op in applies) == [
            "Adam/update_b/ApplyAdam",
            "Adam/update_w/ApplyAdam",
        ]


def test_global_step_counts_steps() -> None:
    with ow.Graph().as_default():
        w = ow.Variable(1.0)
        step = ow.train.get_or_create_global_step()
        assert step is ow.train.get_global_step()
        assert step.name == "global_step:0"
        assert step.dtype is ow.int64
        with pytest.raises(ValueError, match="already exists"):
            ow.train.create_global_step()
        train = ow.train.GradientDescentOptimizer(0.1).minimize(w * w, global_step=step)
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            for _ in range(5):
                s.run(train)
            assert ow.train.global_step(s, step) == 5
    with ow.Graph().as_default(), ow.variable_scope("somewhere"):
        assert ow.train.get_global_step() is None
        assert ow.train.create_global_step().name == "global_step:0"


def test_hyper_parameters_may_be_tensors_placeholders_or_callables() -> None:
    with ow.Graph().as_default():
        w = ow.Variable(1.0)
        lr = ow.placeholder(ow.float32, [])
        step_fed = ow.train.GradientDescentOptimizer(lr).minimize(w * w)
        step_tensor = ow.train.MomentumOptimizer(ow.constant(0.1), lambda: 0.0).minimize(w * w)
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            s.run(step_fed, {lr: 0.25})  # w -= 0.25 * 2w
            assert s.run(w) == 0.5
            s.run(step_tensor)  # w -= 0.1 * 2w
            assert s.run(w) == pytest.approx(0.4)


def test_compute_and_apply_gradients_separately_with_a_gradient_transform() -> None:
    with ow.Graph().as_default():
        w = ow.Variable([1.0, 2.0])
        u = ow.Variable(5.0)  # no gradient: left alone
        opt = ow.train.GradientDescentOptimizer(1.0)
        gv = opt.compute_gradients(ow.reduce_sum(w * w), var_list=[w, u])
        assert gv[1][0] is None
        assert gv[1][1] is u
        train = opt.apply_gradients([(g * 0.5 if g is not None else None, v) for g, v in gv])
        gated = ow.train.GradientDescentOptimizer(1.0).compute_gradients(
            ow.reduce_sum(w * w), gate_gradients=ow.train.Optimizer.GATE_GRAPH
        )
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            s.run(train)
            assert s.run(w).tolist() == [0.0, 0.0]
            assert s.run(u) == 5.0
            assert s.run(gated[0][0]).tolist() == [0.0, 0.0]


def test_a_non_trainable_variable_is_trained_only_when_listed() -> None:
    with ow.Graph().as_default():
        frozen = ow.Variable(2.0, trainable=False)
        loss = frozen * frozen
        with pytest.raises(ValueError, match="No variables to optimize"):
            ow.train.AdamOptimizer().minimize(loss)
        train = ow.train.GradientDescentOptimizer(0.25).minimize(loss, var_list=[frozen])
        with ow.Session() as s:
            s.run(ow.global_variables_initializer())
            s.run(train)
            assert s.run(frozen) == 1.0


def test_no_gradient_path_is_tensorflows_error() -> None:
    with ow.Graph().as_default():
        w = ow.Variable(1.0, name="w")
        n = ow.Variable(3, name="n")
        other = ow.Variable(0.0, name="other")
        with pytest.raises(ValueError, match="No gradients provided for any variable"):
            ow.train.GradientDescentOptimizer(0.1).minimize(other * 2.0, var_list=[w])
        with pytest.raises(ValueError, match="No gradients provided for any variable"):
            ow.train.GradientDescentOptimizer(0.1).apply_gradients([(None, w)])
        with pytest.raises(ValueError, match="No gradients provided"):  # integers: no gradient
            ow.train.GradientDescentOptimizer(0.1).minimize(ow.cast(n, ow.float32), var_list=[n])
        with pytest.raises(ValueError, match="Invalid type int32"):
            ow.train.GradientDescentOptimizer(0.1).minimize(n * 2)
        with pytest.raises(ValueError, match="No variables provided"):
            ow.train.GradientDescentOptimizer(0.1).apply_gradients([])
        with pytest.raises(TypeError, match=r"not a tf\.Variable"):
            ow.train.GradientDescentOptimizer(0.1).minimize(w * 2.0, var_list=[w.value()])
        with pytest.raises(ValueError, match="gate_gradients"):
            ow.train.GradientDescentOptimizer(0.1).compute_gradients(w * 2.0, gate_gradients=7)
        with pytest.raises(ValueError, match="initial_accumulator_value must be positive"):
            ow.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
        with pytest.raises(ValueError, match="optimizer name"):
            ow.train.GradientDescentOptimizer(0.1, name="")


def test_a_hyper_parameter_of_the_wrong_shape_fails_clearly() -> None:
    with ow.Graph().as_default():
        w = ow.Variable([1.0, 2.0])
        with pytest.raises(ValueError, match="rank 0"):
            ow.train.GradientDescentOptimizer([0.1, 0.2]).minimize(ow.reduce_sum(w * w))
        lr = ow.placeholder(ow.float32)
        train = ow.train.GradientDescentOptimizer(lr).minimize(ow.reduce_sum(w * w))
        with ow.Session() as s:
            s.run(w.initializer)
            with pytest.raises(ow.errors.InvalidArgumentError, match="alpha is not a scalar"):
                s.run(train, {lr: [0.1, 0.2]})


def test_constraint_projects_after_the_update() -> None:
    with ow.Graph().as_default():
        w = ow.Variable([3.0, -3.0], constraint=lambda t: ow.maximum(t, 0.0))
        train = ow.train.GradientDescentOptimizer(0.1).minimize(ow.reduce_sum(w))
        with ow.Session() as s:
            s.run(w.initializer)
            s.run(train)
            assert s.run(w).tolist() == pytest.approx([2.9, 0.0])


def test_an_uninitialized_slot_is_failed_precondition_naming_it() -> None:
    with ow.Graph().as_default():
        w = ow.Variable(1.0, name="w")
        train = ow.train.AdamOptimizer().minimize(w * w)
        with ow.Session() as s:
            s.run(w.initializer)  # the slots and beta powers were not initialized
            with pytest.raises(ow.errors.FailedPreconditionError, match="uninitialized value"):
                s.run(train)
