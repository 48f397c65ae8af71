"""opweave.integrations.dask.map_blocks / map_partitions on a real cluster (2 worker processes x
1 thread, pools sized by the plugin): results identical to a local run, one Session per graph
and worker, the graph shipped once, bad input named, a killed worker's blocks recomputed."""

from __future__ import annotations

import os
import pickle
import signal
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

pytest.importorskip("distributed", reason="dask.distributed is not installed (extra: integrations)")
pytest.importorskip("google.protobuf", reason="protobuf is not installed (extra: graphdef)")

import dask.array as da
import opweave as ow
from distributed import Client, LocalCluster
from opweave.integrations import _graphs
from opweave.integrations.dask import OpweaveWorkerPlugin, map_blocks, map_partitions

WIDTH = 64


def _mlp(width: int = WIDTH, layers: int = 2, seed: int = 0) -> ow.Graph:
    rng = np.random.default_rng(seed)
    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(None, 16), name="x")
        h = x
        for _ in range(layers):
            w = rng.standard_normal((int(h.shape[1]), width)).astype(np.float32) / 4
            h = ow.nn.relu(ow.matmul(h, w) + rng.standard_normal(width).astype(np.float32))
        ow.identity(ow.matmul(h, rng.standard_normal((width, 3)).astype(np.float32)), name="y")
    return g


def _local(graph: ow.Graph, blocks: list[np.ndarray], fetch: str = "y:0") -> np.ndarray:
    with ow.Session(graph=graph) as sess:
        return np.concatenate([sess.run(fetch, {"x:0": b}) for b in blocks])


def _data(rows: int = 256, chunk: int = 32, seed: int = 1) -> tuple[np.ndarray, Any]:
    x = np.random.default_rng(seed).standard_normal((rows, 16)).astype(np.float32)
    return x, da.from_array(x, chunks=(chunk, 16))


def _built() -> int:
    from opweave.integrations import _graphs

    return _graphs.built_count


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        Client(cluster) as c,
    ):
        c.register_plugin(OpweaveWorkerPlugin())
        yield c


def test_map_blocks_gives_the_local_results_bit_for_bit(client: Client) -> None:
    g = _mlp()
    x, dx = _data()
    got = map_blocks(g, "y:0", {"x:0": dx})
    assert got.chunks == (dx.chunks[0], (3,))
    assert got.dtype == np.float32
    want = _local(g, [x[i : i + 32] for i in range(0, 256, 32)])
    np.testing.assert_array_equal(got.compute(), want)


def test_each_worker_builds_one_session_per_graph_and_reuses_it(client: Client) -> None:
    before = client.run(_built)
    g = _mlp(seed=7)
    _, dx = _data(rows=512, chunk=16)
    for _ in range(3):
        map_blocks(g, "y", {"x": dx}).compute()
    built = {w: n - before[w] for w, n in client.run(_built).items()}
    assert sum(built.values()) >= 1
    assert all(n <= 1 for n in built.values()), built  # 32 blocks x 3 computes, one build each
    map_blocks(_mlp(seed=8), "y", {"x": dx}).compute()
    again = {w: n - before[w] for w, n in client.run(_built).items()}
    assert all(n <= 2 for n in again.values()), again
    # The sessions run on the pools the plugin sized: one thread per worker (threads_per_worker).
    assert set(client.run(_pools).values()) == {(1, 1)}


def _pools() -> tuple[int, int]:
    import opweave

    return opweave.get_num_threads(), opweave.get_num_interop_threads()


def test_the_graph_is_shipped_once_not_with_every_task(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = _mlp(width=512)  # about 0.5 MB of weights
    size = len(big.as_graph_def().SerializeToString())
    assert size > 400_000
    _, dx = _data(rows=512, chunk=16)
    out = map_blocks(big, "y:0", {"x:0": dx})
    assert len(pickle.dumps(out.__dask_graph__())) < size / 4  # 32 tasks, a scattered future
    assert map_blocks(big, "y:0", {"x:0": dx}).__dask_graph__().keys() == (
        out.__dask_graph__().keys()
    )  # scattered once: the same future again

    def no_client() -> None:
        raise ValueError("No clients found")

    # Without a distributed client the payload is one key of the task graph: there once.
    monkeypatch.setattr("distributed.default_client", no_client)
    local = map_blocks(big, "y:0", {"x:0": dx})
    assert size < len(pickle.dumps(local.__dask_graph__())) < 2 * size
    np.testing.assert_array_equal(local.compute(scheduler="sync"), out.compute())


def test_constant_feeds_and_new_output_shapes(client: Client) -> None:
    g = ow.Graph()
    with g.as_default():
        x = ow.placeholder(ow.float32, shape=(None, 4), name="x")
        scale = ow.placeholder(ow.float32, shape=(), name="scale")
        ow.reduce_sum(x * scale, axis=1, name="total")
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    out = map_blocks(g, "total:0", {"x": da.from_array(x, chunks=(3, 4)), "scale": 2.0})
    assert out.ndim == 1
    np.testing.assert_array_equal(out.compute(), (x * 2).sum(axis=1))


def test_a_feed_not_in_the_graph_is_a_clear_error_on_the_client(client: Client) -> None:
    _, dx = _data()
    with pytest.raises(ValueError, match=r"feed 'input' is not a tensor of the graph.*x"):
        map_blocks(_mlp(), "y:0", {"input": dx})
    with pytest.raises(ValueError, match="fetch 'nope:0'"):
        map_blocks(_mlp(), "nope:0", {"x": dx})
    with pytest.raises(TypeError, match=r"feed 'x'.*dtype <U1"):
        map_blocks(_mlp(), "y:0", {"x": da.from_array(np.full((4, 16), "a"), chunks=2)})


def _one_bad_block(block: np.ndarray, block_info: Any = None) -> np.ndarray:
    if block_info[None]["chunk-location"][0] == 2:
        return np.full(block.shape, "oops")  # declared float32, but a string block
    return block


def test_a_block_of_the_wrong_dtype_is_named_in_the_error_on_the_client(client: Client) -> None:
    _, dx = _data(rows=128, chunk=32)
    lying = dx.map_blocks(_one_bad_block, dtype=np.float32)
    out = map_blocks(_mlp(), "y:0", {"x:0": lying})
    with pytest.raises(TypeError, match=r"opweave map_blocks, block \(2, 0\): feed 'x:0' has"):
        out.compute()


def test_a_block_the_graph_fails_on_is_named_in_the_error(client: Client) -> None:
    g = ow.Graph()
    with g.as_default():
        ids = ow.placeholder(ow.int32, shape=(None,), name="ids")
        ow.gather(ow.constant(np.arange(10, dtype=np.float32)), ids, name="picked")
    values = np.array([1, 2, 3, 4, 50, 6], np.int32)  # 50 is out of range, in block 2
    out = map_blocks(g, "picked:0", {"ids": da.from_array(values, chunks=2)})
    with pytest.raises(ow.errors.InvalidArgumentError, match=r"block \(2,\).*not in \[0, 10\)"):
        out.compute()


def _slow_graph() -> ow.Graph:
    rng = np.random.default_rng(3)
    g = ow.Graph()
    with g.as_default():
        h = ow.placeholder(ow.float32, shape=(None, 256), name="x")
        w = rng.standard_normal((256, 256)).astype(np.float32) / 16
        for _ in range(40):
            h = ow.tanh(ow.matmul(h, w))
        ow.identity(h, name="y")
    return g


def test_a_worker_killed_mid_task_loses_and_duplicates_no_block(client: Client) -> None:
    g = _slow_graph()
    x = np.random.default_rng(4).standard_normal((24 * 64, 256)).astype(np.float32)
    future = client.compute(map_blocks(g, "y:0", {"x": da.from_array(x, chunks=(64, 256))}))
    pids = client.run(os.getpid)
    deadline = time.monotonic() + 60
    victim = None
    while victim is None and time.monotonic() < deadline:
        busy = [w for w, tasks in client.processing().items() if tasks]
        if busy and client.run(lambda: _built(), workers=[busy[0]])[busy[0]] > 0:
            victim = busy[0]
        time.sleep(0.05)
    assert victim is not None, "no worker started a task"
    os.kill(pids[victim], signal.SIGKILL)  # a worker process this test's cluster started
    got = future.result(timeout=120)
    want = _local(g, [x[i : i + 64] for i in range(0, len(x), 64)])
    np.testing.assert_array_equal(got, want)
    client.wait_for_workers(2, timeout=60)
    assert pids[victim] not in client.run(os.getpid).values()  # it was killed and replaced


def test_map_partitions_gives_the_local_results(client: Client) -> None:
    pd = pytest.importorskip("pandas", reason="pandas is not installed (Dask DataFrame needs it)")
    dd = pytest.importorskip("dask.dataframe")
    g = _mlp()
    x, _ = _data(rows=90)
    frame = pd.DataFrame(x, columns=[f"f{i}" for i in range(16)])
    frame["other"] = np.arange(90)
    ddf = dd.from_pandas(frame, npartitions=4)
    out = map_partitions(g, {"y": "y:0"}, {"x": [f"f{i}" for i in range(16)]}, ddf)
    assert list(out.columns) == ["y_0", "y_1", "y_2"]
    got = out.compute()
    sizes = list(ddf.map_partitions(len).compute())
    want = _local(g, np.split(x, np.cumsum(sizes)[:-1]))  # the same blocks, run here
    np.testing.assert_array_equal(got.to_numpy(), want)
    assert list(got.index) == list(frame.index)
    bad = frame.assign(f3=frame["f3"].astype(str))
    with pytest.raises(TypeError, match="column 'f3'"):
        map_partitions(g, {"y": "y:0"}, {"x": [f"f{i}" for i in range(16)]}, dd.from_pandas(bad, 2))


def test_the_client_process_builds_no_session() -> None:
    # map_blocks checks names on the client against the graph; it never runs it there.
    before = _graphs.built_count
    _, dx = _data()
    map_blocks(_mlp(), "y:0", {"x": dx})
    assert _graphs.built_count == before
