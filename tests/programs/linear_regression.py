"""Linear regression, as TensorFlow 1 tutorials write it: placeholders, two Variables, a squared
error, GradientDescentOptimizer.minimize, and sess.run in a loop (one example per step).

    python tests/programs/linear_regression.py               # opweave
    python tests/programs/linear_regression.py --tensorflow  # the same program on TensorFlow 1

Prints the final training cost, W and b as JSON; ``main(tf)`` returns them (the tests run it).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

LEARNING_RATE = 0.01
EPOCHS = 1000


def main(tf: Any, epochs: int = EPOCHS) -> dict[str, Any]:
    """Train on the tutorial's 17 points; the training cost, W and b at the end."""
    train_x = np.asarray([3.3, 4.4, 5.5, 6.71, 6.93, 4.168, 9.779, 6.182, 7.59, 2.167, 7.042,
                          10.791, 5.313, 7.997, 5.654, 9.27, 3.1], np.float32)  # fmt: skip
    train_y = np.asarray([1.7, 2.76, 2.09, 3.19, 1.694, 1.573, 3.366, 2.596, 2.53, 1.221, 2.827,
                          3.465, 1.65, 2.904, 2.42, 2.94, 1.3], np.float32)  # fmt: skip
    n_samples = train_x.shape[0]

    with tf.Graph().as_default():
        X = tf.placeholder("float")
        Y = tf.placeholder("float")
        W = tf.Variable(0.3, name="weight")
        b = tf.Variable(-0.2, name="bias")

        pred = tf.add(tf.multiply(X, W), b)
        cost = tf.reduce_sum(tf.square(pred - Y)) / (2 * n_samples)
        optimizer = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(cost)
        init = tf.global_variables_initializer()

        with tf.Session() as sess:
            sess.run(init)
            for _ in range(epochs):
                for x, y in zip(train_x, train_y, strict=True):
                    sess.run(optimizer, feed_dict={X: x, Y: y})
            training_cost = sess.run(cost, feed_dict={X: train_x, Y: train_y})
            return {
                "cost": float(training_cost),
                "W": float(sess.run(W)),
                "b": float(sess.run(b)),
            }


def _tf_from_args() -> Any:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tensorflow", action="store_true", help="run on tensorflow.compat.v1")
    if parser.parse_args().tensorflow:
        import tensorflow.compat.v1 as tf

        tf.disable_v2_behavior()
        return tf
    import opweave as tf

    return tf


if __name__ == "__main__":
    print(json.dumps(main(_tf_from_args())))
