"""TensorFlow 1's "Deep MNIST for experts" program (tensorflow/examples/tutorials/mnist/
mnist_deep.py): two convolution + 2x2 max-pool layers, a 1024-unit dense layer with dropout and a
10-way readout, trained with Adam (1e-4) on softmax cross-entropy, batches of 50 for 20000 steps.

The program is TensorFlow 1's, call for call (its graph, names, feeds, printing, the graph written
for TensorBoard, ``tf.app.run``); only the imports differ (``import tensorflow as tf`` and
``from tensorflow.examples.tutorials.mnist import input_data``). Without the four MNIST files in
``--data_dir``, ``input_data`` generates a synthetic MNIST-shaped data set.

    python -m opweave.examples.tutorials.mnist.mnist_deep --data_dir /path/to/mnist
"""

# The tutorial's own spelling is kept (%-formatting, list concatenation), as its pylint pragmas
# kept TensorFlow's linters quiet about its names:
# ruff: noqa: UP031, RUF005

from __future__ import annotations

import argparse
import sys
import tempfile
from typing import Any

import opweave.compat.v1 as tf  # TensorFlow 1: import tensorflow as tf
from opweave.examples.tutorials.mnist import input_data

FLAGS: Any = None


def deepnn(x: Any) -> tuple[Any, Any]:
    """The network: ``x`` of shape (examples, 784) to logits of shape (examples, 10).

    Returns the logits and the placeholder of the dropout keep-probability (a scalar: 0.5 while
    training, 1.0 to evaluate).
    """
    # Images as NHWC, one grey channel.
    with tf.name_scope("reshape"):
        x_image = tf.reshape(x, [-1, 28, 28, 1])

    # 5x5 filters, 1 channel in, 32 feature maps out.
    with tf.name_scope("conv1"):
        W_conv1 = weight_variable([5, 5, 1, 32])
        b_conv1 = bias_variable([32])
        h_conv1 = tf.nn.relu(conv2d(x_image, W_conv1) + b_conv1)

    # 28x28 -> 14x14.
    with tf.name_scope("pool1"):
        h_pool1 = max_pool_2x2(h_conv1)

    # 5x5 filters, 32 feature maps in, 64 out.
    with tf.name_scope("conv2"):
        W_conv2 = weight_variable([5, 5, 32, 64])
        b_conv2 = bias_variable([64])
        h_conv2 = tf.nn.relu(conv2d(h_pool1, W_conv2) + b_conv2)

    # 14x14 -> 7x7.
    with tf.name_scope("pool2"):
        h_pool2 = max_pool_2x2(h_conv2)

    # The 7x7x64 maps, flattened, to 1024 units.
    with tf.name_scope("fc1"):
        W_fc1 = weight_variable([7 * 7 * 64, 1024])
        b_fc1 = bias_variable([1024])

        h_pool2_flat = tf.reshape(h_pool2, [-1, 7 * 7 * 64])
        h_fc1 = tf.nn.relu(tf.matmul(h_pool2_flat, W_fc1) + b_fc1)

    # Dropout on the dense layer, its keep-probability fed at each run.
    with tf.name_scope("dropout"):
        keep_prob = tf.placeholder(tf.float32)
        h_fc1_drop = tf.nn.dropout(h_fc1, keep_prob)

    # 1024 units to the ten digit logits.
    with tf.name_scope("fc2"):
        W_fc2 = weight_variable([1024, 10])
        b_fc2 = bias_variable([10])

        y_conv = tf.matmul(h_fc1_drop, W_fc2) + b_fc2
    return y_conv, keep_prob


def conv2d(x: Any, W: Any) -> Any:
    """A stride-1 convolution whose output keeps the input's height and width."""
    return tf.nn.conv2d(x, W, strides=[1, 1, 1, 1], padding="SAME")


def max_pool_2x2(x: Any) -> Any:
    """Halves the height and width: the maximum of each 2x2 block."""
    return tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")


def weight_variable(shape: list[int]) -> Any:
    """A weight Variable drawn from a normal of deviation 0.1, truncated at two deviations."""
    initial = tf.truncated_normal(shape, stddev=0.1)
    return tf.Variable(initial)


def bias_variable(shape: list[int]) -> Any:
    """A bias Variable of 0.1 everywhere, so that the ReLUs start active."""
    initial = tf.constant(0.1, shape=shape)
    return tf.Variable(initial)


def main(_: Any) -> None:
    # The data: one-hot labels.
    mnist = input_data.read_data_sets(FLAGS.data_dir, one_hot=True)

    # The inputs.
    x = tf.placeholder(tf.float32, [None, 784])

    # The labels, for the loss.
    y_ = tf.placeholder(tf.float32, [None, 10])

    # The network.
    y_conv, keep_prob = deepnn(x)

    with tf.name_scope("loss"):
        cross_entropy = tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y_conv)
    cross_entropy = tf.reduce_mean(cross_entropy)

    with tf.name_scope("adam_optimizer"):
        train_step = tf.train.AdamOptimizer(1e-4).minimize(cross_entropy)

    with tf.name_scope("accuracy"):
        correct_prediction = tf.equal(tf.argmax(y_conv, 1), tf.argmax(y_, 1))
        correct_prediction = tf.cast(correct_prediction, tf.float32)
    accuracy = tf.reduce_mean(correct_prediction)

    graph_location = tempfile.mkdtemp()
    print("Saving graph to: %s" % graph_location)
    train_writer = tf.summary.FileWriter(graph_location)
    train_writer.add_graph(tf.get_default_graph())

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(20000):
            batch = mnist.train.next_batch(50)
            if i % 100 == 0:
                train_accuracy = accuracy.eval(
                    feed_dict={x: batch[0], y_: batch[1], keep_prob: 1.0}
                )
                print("step %d, training accuracy %g" % (i, train_accuracy))
            train_step.run(feed_dict={x: batch[0], y_: batch[1], keep_prob: 0.5})

        print(
            "test accuracy %g"
            % accuracy.eval(feed_dict={x: mnist.test.images, y_: mnist.test.labels, keep_prob: 1.0})
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--data_dir",
        type=str,
        default="/tmp/tensorflow/mnist/input_data",
        help="Directory for storing input data",
    )
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
