"""opweave.integrations.ray.configure(): pools sized to the CPUs Ray assigned to the task."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (extra: integrations)")

import opweave.integrations.ray as opweave_ray  # noqa: E402
from opweave.integrations._graphs import GraphPayload  # noqa: E402
from opweave.integrations.ray import GraphPredictor  # noqa: E402


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    """One local Ray instance for the module, with 2 CPUs."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@ray.remote
def _configure_and_report(intra: int | None = None, inter: int | None = None) -> list[object]:
    import opweave
    import opweave.integrations.ray as opweave_ray
    from opweave import _runtime

    returned = opweave_ray.configure(intra=intra, inter=inter)
    return [
        list(returned),
        opweave.get_num_threads(),
        opweave.get_num_interop_threads(),
        _runtime.intra_source(),
    ]


def test_configure_sizes_the_pools_to_the_tasks_cpus(ray_cluster: None) -> None:
    one = ray.get(_configure_and_report.options(num_cpus=1).remote())
    two = ray.get(_configure_and_report.options(num_cpus=2).remote())
    assert one[:3] == [[1, 1], 1, 1]
    assert two[:3] == [[2, 2], 2, 2]
    assert two[3] == "opweave.integrations.ray.configure (assigned CPU=2)"


def test_configure_rounds_a_fractional_allocation_down_but_never_below_one(
    ray_cluster: None,
) -> None:
    assert ray.get(_configure_and_report.options(num_cpus=0.5).remote())[:3] == [[1, 1], 1, 1]


def test_configure_takes_explicit_sizes(ray_cluster: None) -> None:
    got = ray.get(_configure_and_report.options(num_cpus=2).remote(intra=1, inter=2))
    assert got[:3] == [[1, 2], 1, 2]


def test_configure_in_an_actor_uses_the_actors_cpus(ray_cluster: None) -> None:
    @ray.remote(num_cpus=2)
    class Model:
        def __init__(self) -> None:
            opweave_ray.configure()

        def sizes(self) -> list[int]:
            import numpy as np
            import opweave

            a = np.ones((64, 64))
            assert (opweave.kernels.matmul(a, a) == a @ a).all()
            return [opweave.get_num_threads(), opweave.get_num_interop_threads()]

    model = Model.remote()  # type: ignore[attr-defined]
    assert ray.get(model.sizes.remote()) == [2, 2]
    ray.kill(model)


def test_configure_outside_a_task_is_a_clear_error(ray_cluster: None) -> None:
    with pytest.raises(RuntimeError, match="inside a Ray task or actor"):
        opweave_ray.configure()


# -- GraphPredictor: a graph over batches, one Session per actor --------------------------------


def _graph(layers: int = 2, width: int = 32, seed: int = 0) -> Any:
    import numpy as np
    import opweave as ow

    rng = np.random.default_rng(seed)
    g = ow.Graph()
    with g.as_default():
        h = ow.placeholder(ow.float32, shape=(None, 8), name="x")
        for _ in range(layers):
            w = rng.standard_normal((int(h.shape[1]), width)).astype(np.float32) / 4
            h = ow.tanh(ow.matmul(h, w))
        ow.identity(ow.reduce_sum(h, axis=1), name="score")
        ow.identity(h[:, :2], name="first_two")
    return g


def _batches(n: int, rows: int = 16, seed: int = 1) -> list[dict[str, Any]]:
    import numpy as np

    rng = np.random.default_rng(seed)
    return [{"data": rng.standard_normal((rows, 8)).astype(np.float32)} for _ in range(n)]


def _local(graph: Any, batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    import opweave as ow

    with ow.Session(graph=graph) as sess:
        outs = [sess.run(["score:0", "first_two:0"], {"x:0": b["data"]}) for b in batches]
    return [{"score": score, "pair": pair} for score, pair in outs]


FETCHES = {"score": "score:0", "pair": "first_two:0"}


def _probe_class() -> Any:
    """A GraphPredictor that also reports on its process (defined in a function, so Ray's
    workers receive the class itself: they cannot import this test module)."""

    class Probe(GraphPredictor):  # type: ignore[misc]
        def state(self) -> dict[str, Any]:
            import os

            import opweave
            from opweave.integrations import _graphs

            return {
                "pid": os.getpid(),
                "built": _graphs.built_count,
                "pools": (opweave.get_num_threads(), opweave.get_num_interop_threads()),
            }

    return ray.remote(num_cpus=1, max_restarts=1, max_task_retries=1)(Probe)


SLOW = {"layers": 20, "width": 256, "seed": 2}  # about 30 ms a batch of 256 rows on one core


@pytest.fixture
def probes(ray_cluster: None) -> Iterator[list[Any]]:
    """Two actors of one CPU each (the cluster's two) running the SLOW graph, restartable once
    (a killed one comes back and retries its method calls); killed after the test."""
    graph = ray.put(GraphPayload.from_graph(_graph(**SLOW)))  # held here: a restart needs it
    pair = [_probe_class().remote(graph, FETCHES, {"x": "data"}) for _ in range(2)]
    yield pair
    for a in pair:
        ray.kill(a)


def test_graph_predictor_actors_give_the_local_results_with_one_session_each(
    probes: list[Any],
) -> None:
    import numpy as np

    batches = _batches(6, rows=64)
    pool = ray.util.ActorPool(probes)
    got = list(pool.map(lambda a, b: a.__call__.remote(b), batches))
    for g, w in zip(got, _local(_graph(**SLOW), batches), strict=True):
        np.testing.assert_array_equal(g["score"], w["score"])
        np.testing.assert_array_equal(g["pair"], w["pair"])
    states = ray.get([a.state.remote() for a in probes])
    assert [s["built"] for s in states] == [1, 1]  # the graph built once per actor, reused
    assert [s["pools"] for s in states] == [(1, 1), (1, 1)]  # sized to num_cpus=1


def test_a_bad_batch_is_a_clear_error_naming_it_on_the_driver(probes: list[Any]) -> None:
    import numpy as np

    with pytest.raises(ValueError, match=r"GraphPredictor, batch \d+ of this actor: columns"):
        ray.get(probes[0].__call__.remote({"other": np.ones((2, 8), np.float32)}))
    with pytest.raises(TypeError, match=r"batch \d+ of this actor: feed 'x:0' has dtype <U1"):
        ray.get(probes[0].__call__.remote({"data": np.full((2, 8), "a")}))
    with pytest.raises(ValueError, match="feed 'y' is not a tensor of the graph"):
        GraphPredictor(_graph(), FETCHES, {"y": "data"})


def test_an_actor_killed_mid_batch_is_restarted_and_no_batch_is_lost(probes: list[Any]) -> None:
    import os
    import signal

    import numpy as np

    pid = ray.get(probes[0].state.remote())["pid"]
    batches = _batches(12, rows=256, seed=3)
    refs = [probes[i % 2].__call__.remote(b) for i, b in enumerate(batches)]
    ray.wait(refs[:2], num_returns=1, timeout=60)  # running now; ten more queued
    os.kill(pid, signal.SIGKILL)  # an actor process of this test
    got = ray.get(refs, timeout=120)
    assert ray.get(probes[0].state.remote())["pid"] != pid  # restarted
    for g, w in zip(got, _local(_graph(**SLOW), batches), strict=True):
        np.testing.assert_array_equal(g["score"], w["score"])


@pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")  # Ray's own, about its settings
def test_ray_data_map_batches_with_an_actor_pool(ray_cluster: None) -> None:
    pytest.importorskip("pyarrow", reason="ray.data needs pyarrow, which is not installed")
    pytest.importorskip("pandas", reason="ray.data needs pandas, which is not installed")
    import numpy as np

    x = np.random.default_rng(5).standard_normal((200, 8)).astype(np.float32)
    blocks = [x[i : i + 50] for i in range(0, 200, 50)]  # four blocks, for two actors
    ds = ray.data.from_numpy(blocks).map_batches(
        GraphPredictor,
        fn_constructor_kwargs={"graph": _graph(), "fetches": FETCHES, "feeds": {"x": "data"}},
        compute=ray.data.ActorPoolStrategy(size=2),
        num_cpus=1,
        batch_size=50,
        batch_format="numpy",
    )
    rows = ds.take_all()
    assert len(rows) == 200
    scores = np.array(sorted(float(r["score"]) for r in rows))
    want = np.sort(_local(_graph(), [{"data": x}])[0]["score"].astype(np.float64))
    np.testing.assert_allclose(scores, want, rtol=1e-5, atol=1e-6)
