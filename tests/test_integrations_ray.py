"""opweave.integrations.ray.configure(): pools sized to the CPUs Ray assigned to the task."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (extra: integrations)")

import opweave.integrations.ray as opweave_ray  # noqa: E402


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
