"""``from opweave.examples.tutorials.mnist import input_data``, as TensorFlow 1 tutorials do."""
