"""``spec.roles.<role>.memory`` and ``.cpus_per_gpu`` reach the artifacts of the launchers that can reserve them
(Slurm, Kubernetes) and are refused, with their field paths, by those that cannot (Ray, local).

Before, every launcher accepted them and none rendered them: ``memory=777Gi cpus_per_gpu=13`` appeared in no
sbatch script and no RayJob.
"""

from __future__ import annotations

from typing import Any

import pytest

from rladapt.launchers.kubernetes import KubernetesLauncher
from rladapt.launchers.local import LocalLauncher
from rladapt.launchers.ray import RayLauncher
from rladapt.launchers.slurm import SCRIPT, SlurmLauncher
from rladapt.pipeline import render_native
from rladapt.plugins import Launcher, NativeLaunch, load_registry
from rladapt.plugins.launcher import render_artifacts
from rladapt.primitives import SpecError, load_job
from tests.conftest import EXAMPLES
from tests.launchers.test_kubernetes import assert_valid, containers, manifests

ASKED = ["spec.roles.actor.memory=777Gi", "spec.roles.actor.cpus_per_gpu=13"]
IMAGE = "ghcr.io/example/rl:2025.1"


def launch(*overrides: str) -> NativeLaunch:
    registry = load_registry(builtins={"verl": "rladapt.adapters.verl"}, use_entry_points=False)
    job = load_job(EXAMPLES[0], [*overrides, "spec.secrets=[]"])  # secrets are not under test here
    return render_native(job, "verl", registry).native


def sbatch_lines(native: NativeLaunch, **options: Any) -> list[str]:
    script = render_artifacts(SlurmLauncher(), native, options).files[SCRIPT]
    return [line for line in script.splitlines() if line.startswith("#SBATCH")]


def test_placement_carries_what_each_role_asks() -> None:
    placement = launch(*ASKED).placement
    assert (placement["actor"].memory, placement["actor"].cpus_per_gpu) == ("777Gi", 13)
    assert (placement["rollout"].memory, placement["rollout"].cpus_per_gpu) == (None, None)


def test_the_sbatch_script_asks_slurm_for_the_memory_and_the_cpus_per_gpu() -> None:
    native = launch(*ASKED)
    assert native.gpus_per_node == 8
    lines = sbatch_lines(native)
    # sbatch: --mem is the real memory per node, in units of 1024 (K, M, G, T); --cpus-per-gpu the CPUs per GPU.
    assert "#SBATCH --mem=777G" in lines and "#SBATCH --cpus-per-gpu=13" in lines
    assert not any(line.startswith("#SBATCH --cpus-per-task") for line in lines)
    assert not any(
        line.startswith(("#SBATCH --mem", "#SBATCH --cpus-per-gpu")) for line in sbatch_lines(launch())
    )


def test_slurm_asks_for_the_cpus_ray_is_told_to_use() -> None:
    """Ray starts with --num-cpus=$SLURM_CPUS_ON_NODE (or cpus_per_task): Slurm must be asked for a CPU count
    or whole nodes. Before issue 24 a job asking no count got Slurm's default, often one CPU per task."""
    script = render_artifacts(SlurmLauncher(), launch(), {}).files[SCRIPT]
    lines = [line for line in script.splitlines() if line.startswith("#SBATCH")]
    assert "#SBATCH --exclusive" in lines
    assert "# CPUs: whole nodes (--exclusive): no CPU count is asked" in script
    assert 'rladapt_ray_cpus="$SLURM_CPUS_ON_NODE"' in script and '--num-cpus="$rladapt_ray_cpus"' in script
    counted = sbatch_lines(launch(*ASKED))
    assert "#SBATCH --cpus-per-gpu=13" in counted and "#SBATCH --exclusive" not in counted
    by_task = render_artifacts(SlurmLauncher(), launch(), {"cpus_per_task": "32"}).files[SCRIPT]
    assert "#SBATCH --cpus-per-task=32" in by_task and "#SBATCH --exclusive" not in by_task
    assert "rladapt_ray_cpus=32" in by_task
    assert "#SBATCH --exclusive" not in sbatch_lines(launch(), exclusive="false")
    assert "#SBATCH --exclusive" in sbatch_lines(launch(*ASKED), exclusive="true")
    assert "#SBATCH --exclusive" not in sbatch_lines(launch(), gpus_per_node="0")  # a CPU-only test run


def test_sizes_convert_to_slurm_units_and_the_largest_role_of_a_node_wins() -> None:
    native = launch("spec.roles.actor.memory=1.5Gi", "spec.roles.rollout.memory=1000M")
    assert "#SBATCH --mem=1536M" in sbatch_lines(native)  # 1.5 GiB, over 1000 MB (954 MiB)


def test_launcher_options_override_the_roles_and_the_script_says_so() -> None:
    native = launch(*ASKED)
    script = render_artifacts(SlurmLauncher(), native, {"mem": "64G", "cpus_per_task": "32"}).files[SCRIPT]
    assert "#SBATCH --mem=64G" in script and "#SBATCH --cpus-per-task=32" in script
    assert "--cpus-per-gpu" not in script and "--mem=777G" not in script
    assert "# spec.roles.actor.memory=777Gi: overridden by mem" in script
    assert "# spec.roles.actor.cpus_per_gpu=13: overridden by cpus_per_task" in script
    cpu_only = render_artifacts(SlurmLauncher(), native, {"gpus_per_node": "0"}).files[SCRIPT]
    assert "--cpus-per-gpu" not in cpu_only and "# spec.roles.actor.cpus_per_gpu=13: not asked" in cpu_only


def test_a_memory_that_is_not_a_size_is_refused_with_its_path() -> None:
    with pytest.raises(SpecError) as caught:
        render_artifacts(SlurmLauncher(), launch("spec.roles.actor.memory=lots"), {})
    assert [(p.path, p.found) for p in caught.value.problems] == [("spec.roles.actor.memory", "'lots'")]


def test_the_rayjob_worker_pods_request_the_memory_and_cpus_per_gpu_times_their_gpus() -> None:
    native = launch(*ASKED)
    pool = native.placement["actor"].pool
    gpus = next(p.gpus_per_node for p in native.pools if p.name == pool)
    artifacts = render_artifacts(KubernetesLauncher(), native, {"image": IMAGE})
    assert_valid(artifacts)  # KubeRay's CRD schema and the Kubernetes pod schema
    rayjob, _ = manifests(artifacts)
    resources: dict[str, Any] = {group: c.get("resources") for group, c in containers(rayjob).items()}
    for amounts in (resources[pool]["requests"], resources[pool]["limits"]):
        assert amounts == {"cpu": str(13 * gpus), "memory": "777Gi", "nvidia.com/gpu": str(gpus)}
    others = [r for group, r in resources.items() if group not in (pool, "head")]
    assert all(set(r["limits"]) == {"nvidia.com/gpu"} for r in others)  # pools of roles that ask nothing
    # the head runs the driver, not the roles: KubeRay's sample head's requests, no limit (test_kube_manifests.py)
    assert resources["head"] == {"requests": {"cpu": "1", "memory": "2Gi"}}
    explicit, _ = manifests(
        render_artifacts(KubernetesLauncher(), native, {"image": IMAGE, "cpu": "8", "memory": "1Gi"})
    )
    limits = containers(explicit)[pool]["resources"]["limits"]
    assert (limits["cpu"], limits["memory"]) == ("8", "1Gi")


@pytest.mark.parametrize("launcher", [RayLauncher(), LocalLauncher()], ids=lambda la: la.PLUGIN_NAME)
def test_launchers_that_cannot_reserve_them_refuse_them_with_the_field_paths(launcher: Launcher) -> None:
    with pytest.raises(SpecError) as caught:
        render_artifacts(launcher, launch(*ASKED), {})
    error = caught.value
    assert error.exit_code == 2
    assert [(p.path, p.found) for p in error.problems] == [
        ("spec.roles.actor.cpus_per_gpu", "13"),
        ("spec.roles.actor.memory", "777Gi"),
    ]
    assert all(f"the {launcher.PLUGIN_NAME} launcher cannot reserve it" in p.message for p in error.problems)
    assert all(p.expected and f"--launcher {launcher.PLUGIN_NAME}" in p.expected for p in error.problems)
    render_artifacts(launcher, launch(), {})  # without them the same job renders
