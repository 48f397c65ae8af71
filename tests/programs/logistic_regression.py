"""Logistic (softmax) regression on MNIST, as TensorFlow 1's tutorial writes it: a 784x10 weight
matrix and a bias from zeros, softmax cross-entropy, GradientDescentOptimizer, mini-batches from
``input_data`` (synthetic MNIST-shaped data when the IDX files are absent), accuracy by argmax.

    python tests/programs/logistic_regression.py               # opweave
    python tests/programs/logistic_regression.py --tensorflow  # the same program on TensorFlow 1

Prints the average cost of the last epoch and the test accuracy as JSON; ``main(tf)`` returns
them.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from opweave.examples.tutorials.mnist import input_data

LEARNING_RATE = 0.5
EPOCHS = 5
BATCH_SIZE = 100


def main(tf: Any, epochs: int = EPOCHS, data_dir: str = "/tmp/opweave_mnist") -> dict[str, Any]:
    mnist = input_data.read_data_sets(data_dir, one_hot=True, synthetic_size=3000)

    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 784])
        y = tf.placeholder(tf.float32, [None, 10])
        W = tf.Variable(tf.zeros([784, 10]))
        b = tf.Variable(tf.zeros([10]))

        logits = tf.matmul(x, W) + b
        cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
        optimizer = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(cost)

        correct = tf.equal(tf.argmax(logits, 1), tf.argmax(y, 1))
        accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
        init = tf.global_variables_initializer()

        with tf.Session() as sess:
            sess.run(init)
            batches = mnist.train.num_examples // BATCH_SIZE
            avg_cost = 0.0
            for _ in range(epochs):
                avg_cost = 0.0
                for _ in range(batches):
                    batch_xs, batch_ys = mnist.train.next_batch(BATCH_SIZE, shuffle=False)
                    _, c = sess.run([optimizer, cost], feed_dict={x: batch_xs, y: batch_ys})
                    avg_cost += float(c) / batches
            acc = sess.run(accuracy, feed_dict={x: mnist.test.images, y: mnist.test.labels})
            return {"cost": avg_cost, "accuracy": float(acc)}


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
