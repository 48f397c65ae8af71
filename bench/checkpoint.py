"""Checkpoint benchmark: opweave's Saver against NumPy's np.save / np.load of the same arrays.

A 100 MB model (float32 variables of 64, 32 and 4 MB) is saved and restored, round after round,
beside the same arrays written by ``np.save`` (one .npy file each) and read back by ``np.load``.
opweave's save does what NumPy's does not: one ``Session.run`` reading the variables (a copy), a
CRC-32C per tensor, ``fsync`` of the file and its folder, the atomic rename and the ``checkpoint``
state file; its restore checks every CRC and assigns the variables in one run. So that the
price of each part shows, NumPy is also timed with an ``fsync`` per file, opweave with fsync made
a no-op, and the file format alone (no session). With ``--tf``, TensorFlow 1's Saver
(tensorflow's compat.v1, its V2 format, no fsync) runs in the same rounds.

Reads come from the page cache (each file was just written), for every library alike. Before
each timed call, ``os.sync()`` writes back what earlier calls left dirty and the disk is given
0.3 s to settle; the calls run in a new random order each round; a first round warms up and is
not counted. Medians and best times over rounds. fsync times depend on the disk and on whoever
else writes to it: read the ratios, and the rows without fsync, rather than the absolute times.

    python bench/checkpoint.py               # 100 MB, 7 rounds
    python bench/checkpoint.py --mb 400 --rounds 5 --tf
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import opweave as ow
from opweave.train import _checkpoint_format as fmt


def arrays(total_mb: int) -> dict[str, np.ndarray[Any, Any]]:
    rng = np.random.default_rng(0)
    sizes = {"layer1/weights": 0.64, "layer2/weights": 0.32, "layer3/weights": 0.04}
    return {
        name: rng.standard_normal(int(total_mb * frac * (1 << 20)) // 4).astype(np.float32)
        for name, frac in sizes.items()
    }


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    # Dirty pages of the previous call would otherwise be written back during this one's fsync;
    # and right after a large fsync, even reads of cached files stall for a while on this kind of
    # disk (ext4 on a virtual disk), so each call starts on a settled disk.
    os.sync()
    time.sleep(0.3)
    t = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--tf", action="store_true", help="also time TensorFlow 1's Saver")
    args = parser.parse_args()
    values = arrays(args.mb)
    total = sum(v.nbytes for v in values.values())
    root = tempfile.mkdtemp(prefix="opweave-bench-ckpt-")
    times: dict[str, list[float]] = {}

    def add(name: str, seconds: float) -> None:
        times.setdefault(name, []).append(seconds)

    g = ow.Graph()
    with g.as_default():
        variables = {k: ow.Variable(v, name=k) for k, v in values.items()}
        saver = ow.train.Saver(max_to_keep=None)
    sess = ow.Session(graph=g)
    sess.run([v.initializer for v in variables.values()])

    tf_state: dict[str, Any] = {}
    if args.tf:
        import tensorflow.compat.v1 as tf1

        tf1.disable_v2_behavior()
        tg = tf1.Graph()
        with tg.as_default():
            for k, v in values.items():
                tf1.Variable(v, name=k)
            tf_state["saver"] = tf1.train.Saver(max_to_keep=2)
            tf_state["sess"] = tf1.Session(graph=tg)
            tf_state["sess"].run(tf1.global_variables_initializer())

    def np_save(fsync: bool, d: str) -> None:
        os.makedirs(d, exist_ok=True)
        for i, v in enumerate(values.values()):
            with open(os.path.join(d, f"{i}.npy"), "wb") as f:
                np.save(f, v)
                if fsync:
                    f.flush()
                    os.fsync(f.fileno())

    def np_load(d: str) -> None:
        for i in range(len(values)):
            np.load(os.path.join(d, f"{i}.npy"))

    def read_format(path: str) -> None:
        with fmt.CheckpointFile(path) as f:
            f.read(list(f.entries))

    def no_fsync(fn: Callable[..., Any], *a: Any, **k: Any) -> Any:
        """``fn`` with fsync a no-op: what a save costs when it does not wait for the disk."""
        real = os.fsync
        os.fsync = lambda fd: None
        try:
            return fn(*a, **k)
        finally:
            os.fsync = real

    rows = [(k, "float32", v) for k, v in values.items()]
    rng = random.Random(0)
    for r in range(args.rounds + 1):  # round 0 warms up (first touches of memory are slow)
        d = os.path.join(root, f"r{r}")
        os.makedirs(d)
        p = os.path.join(d, "model.ckpt")
        saves: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
            ("opweave Saver.save", saver.save, (sess, p, r)),
            ("opweave Saver.save, no fsync", no_fsync, (saver.save, sess, p + "-nofsync", r)),
            ("format write, no session", fmt.write_checkpoint, (p + "-fmt", rows)),
            ("format write, no fsync", no_fsync, (fmt.write_checkpoint, p + "-nf", rows)),
            ("np.save", np_save, (False, os.path.join(d, "np"))),
            ("np.save + fsync", np_save, (True, os.path.join(d, "npf"))),
        ]
        loads: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [
            ("opweave Saver.restore", saver.restore, (sess, f"{p}-{r}")),
            ("format read, no session", read_format, (p + "-fmt",)),
            ("np.load", np_load, (os.path.join(d, "np"),)),
        ]
        if args.tf:
            tpath = os.path.join(d, "tf", "model.ckpt")
            os.makedirs(os.path.dirname(tpath))
            tf_saver, tf_sess = tf_state["saver"], tf_state["sess"]
            saves.append(("tf.compat.v1 Saver.save", tf_saver.save, (tf_sess, tpath, r)))
            loads.append(
                ("tf.compat.v1 Saver.restore", tf_saver.restore, (tf_sess, f"{tpath}-{r}"))
            )
        # A new order each round, so that no call always follows the same other call.
        rng.shuffle(saves)
        rng.shuffle(loads)
        for name, fn, fn_args in saves + loads:
            seconds = timed(fn, *fn_args)
            if r:
                add(name, seconds)
    shutil.rmtree(root)  # at the end: deleting (and discarding) GBs would disturb the timings

    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    print(
        f"{total / 1e6:.0f} MB in {len(values)} float32 variables, {args.rounds} rounds "
        f"(crc32c on hardware: {ow._opweave_core.crc32c_uses_hardware()})"
    )
    print(f"{'':30} {'median':>9} {'GB/s':>6} {'best':>9} {'GB/s':>6}")
    pairs = [
        ("opweave Saver.save", "np.save + fsync"),
        ("format write, no session", "np.save + fsync"),
        ("opweave Saver.save, no fsync", "np.save"),
        ("format write, no fsync", "np.save"),
        ("opweave Saver.restore", "np.load"),
        ("format read, no session", "np.load"),
    ]
    if args.tf:
        pairs += [
            ("opweave Saver.save", "tf.compat.v1 Saver.save"),
            ("opweave Saver.restore", "tf.compat.v1 Saver.restore"),
        ]
    for name in sorted(med):
        m, b = med[name], best[name]
        rates = f"{total / m / 1e9:6.2f} {b * 1e3:7.1f}ms {total / b / 1e9:6.2f}"
        print(f"{name:30} {m * 1e3:7.1f}ms {rates}")
    print(f"\n{'ratio':58} {'median':>7} {'best':>7}")
    for ours, peer in pairs:
        label = f"{ours} / {peer}"
        print(f"{label:58} {med[ours] / med[peer]:6.2f}x {best[ours] / best[peer]:6.2f}x")


if __name__ == "__main__":
    main()
