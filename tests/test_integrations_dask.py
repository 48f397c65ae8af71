"""opweave.integrations.dask: a WorkerPlugin sizes each worker's pools to its share of CPUs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("distributed", reason="dask.distributed is not installed (extra: integrations)")

import opweave
from distributed import Client, LocalCluster
from opweave.integrations.dask import OpweaveWorkerPlugin


def _worker_state() -> dict[str, Any]:
    import opweave
    from opweave import _runtime

    return {
        "intra": opweave.get_num_threads(),
        "inter": opweave.get_num_interop_threads(),
        "intra_set": opweave.config.threading.get_intra_op_parallelism_threads(),
        "source": _runtime.intra_source(),
    }


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """One cluster for the module: 2 worker processes with 2 task slots each."""
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=2,
            processes=True,
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def test_plugin_sizes_every_workers_pools_to_its_share(client: Client) -> None:
    client.register_plugin(OpweaveWorkerPlugin())
    states = client.run(_worker_state)
    assert len(states) == 2
    for state in states.values():
        assert (state["intra"], state["inter"], state["intra_set"]) == (2, 2, 2)
        assert state["source"] == "opweave.integrations.dask (worker nthreads=2)"


def test_plugin_sizes_explicitly_given_pools_and_a_given_share(client: Client) -> None:
    client.register_plugin(OpweaveWorkerPlugin(inter=1, cpus=1))
    for state in client.run(_worker_state).values():
        assert (state["intra"], state["inter"]) == (1, 1)
        assert state["source"] == "opweave.integrations.dask (cpus=1)"


def test_tasks_run_opweave_work_with_the_plugins_sizes(client: Client) -> None:
    client.register_plugin(OpweaveWorkerPlugin(intra=2, inter=1))

    def task(seed: int) -> tuple[int, float]:
        import numpy as np
        import opweave

        a = np.random.default_rng(seed).standard_normal((128, 64))
        return opweave.get_num_threads(), float(
            np.abs(opweave.kernels.matmul(a, a.T) - a @ a.T).max()
        )

    for threads, err in client.gather(client.map(task, range(4))):
        assert threads == 2
        assert err < 1e-9


def test_unregistering_the_plugin_hands_the_pools_back_to_the_system(client: Client) -> None:
    client.register_plugin(OpweaveWorkerPlugin(intra=1))
    client.unregister_worker_plugin(OpweaveWorkerPlugin.name)
    for state in client.run(_worker_state).values():
        assert state["intra_set"] == 0
        assert "dask" not in state["source"]


def test_plugin_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="positive integer"):
        OpweaveWorkerPlugin(intra=0)
    with pytest.raises(TypeError, match="expects an int, but got float"):
        OpweaveWorkerPlugin(cpus=1.5)  # type: ignore[arg-type]


def test_the_driver_process_is_left_alone(client: Client) -> None:
    before = opweave.config.threading.get_intra_op_parallelism_threads()
    client.register_plugin(OpweaveWorkerPlugin(intra=1))
    assert opweave.config.threading.get_intra_op_parallelism_threads() == before
