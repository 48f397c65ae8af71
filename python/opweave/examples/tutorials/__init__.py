"""TensorFlow 1's tutorial helpers."""
