"""A multilayer perceptron on MNIST trained with Adam, as TensorFlow 1 examples write it: weights
from tf.random_normal in dicts, two ReLU hidden layers, softmax cross-entropy, AdamOptimizer,
mini-batches in a loop, accuracy by argmax.

    python tests/programs/mlp_adam.py               # opweave
    python tests/programs/mlp_adam.py --tensorflow  # the same program on TensorFlow 1

Prints the average cost of the last epoch and the test accuracy as JSON; ``main(tf)`` returns
them. The initial weights come from each library's own random generator (seeded), so the two
runs start from different draws of the same distribution.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from opweave.examples.tutorials.mnist import input_data

LEARNING_RATE = 0.001
EPOCHS = 5
BATCH_SIZE = 100
N_HIDDEN_1 = 128
N_HIDDEN_2 = 128


def main(tf: Any, epochs: int = EPOCHS, data_dir: str = "/tmp/opweave_mnist") -> dict[str, Any]:
    mnist = input_data.read_data_sets(data_dir, one_hot=True, synthetic_size=3000)

    with tf.Graph().as_default():
        tf.set_random_seed(1)
        x = tf.placeholder(tf.float32, [None, 784])
        y = tf.placeholder(tf.float32, [None, 10])
        weights = {
            "h1": tf.Variable(tf.random_normal([784, N_HIDDEN_1], stddev=0.05)),
            "h2": tf.Variable(tf.random_normal([N_HIDDEN_1, N_HIDDEN_2], stddev=0.05)),
            "out": tf.Variable(tf.random_normal([N_HIDDEN_2, 10], stddev=0.05)),
        }
        biases = {
            "b1": tf.Variable(tf.zeros([N_HIDDEN_1])),
            "b2": tf.Variable(tf.zeros([N_HIDDEN_2])),
            "out": tf.Variable(tf.zeros([10])),
        }

        def multilayer_perceptron(inputs: Any) -> Any:
            layer_1 = tf.nn.relu(tf.add(tf.matmul(inputs, weights["h1"]), biases["b1"]))
            layer_2 = tf.nn.relu(tf.add(tf.matmul(layer_1, weights["h2"]), biases["b2"]))
            return tf.matmul(layer_2, weights["out"]) + biases["out"]

        logits = multilayer_perceptron(x)
        loss_op = tf.reduce_mean(
            tf.nn.softmax_cross_entropy_with_logits_v2(logits=logits, labels=y)
        )
        optimizer = tf.train.AdamOptimizer(learning_rate=LEARNING_RATE)
        train_op = optimizer.minimize(loss_op)

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
                    batch_x, batch_y = mnist.train.next_batch(BATCH_SIZE, shuffle=False)
                    _, c = sess.run([train_op, loss_op], feed_dict={x: batch_x, y: batch_y})
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
