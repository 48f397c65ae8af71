"""``opweave.examples``: what TensorFlow 1 tutorials import from ``tensorflow.examples``."""
