"""What `rladapt render` imports, through the real CLI in a fresh process: no framework, nothing heavy, and only
the start-up it needs (the verb's own CLI module, not the run store's or the matrix tools'; no snapshot
generator, no HTTP client, no traceback machinery). The time it takes is benchmarks/bench_render_snapshot.py's
business; this pins the import structure the figures depend on, so a stray top-level import shows up here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import click
import pytest

from rladapt.cli import LAZY_VERBS, cli
from tests.conftest import REPO

GSM8K = str(REPO / "examples" / "grpo-gsm8k.yaml")
#: NeMo-RL has no reward function: the GRPO example with a reward model on its own node (as in the benchmark).
NEMO_OVERRIDES = [
    "spec.reward.function=null",
    "spec.reward.model={path: Skywork/Skywork-Reward-V2-Qwen3-0.6B, micro_batch_per_gpu: 2}",
    "spec.data.train=[data/gsm8k/train.jsonl]",
    "spec.data.val=[data/gsm8k/test.jsonl]",
    "spec.placement.pools=[{name: all, nodes: 1, gpus_per_node: 8, roles: [actor, rollout, ref]},"
    "{name: rm, nodes: 1, gpus_per_node: 8, roles: [reward]}]",
]
CASES = {
    "verl==0.9.1": [],
    "openrlhf==0.11.2": [],
    "nemo-rl==0.7.0": NEMO_OVERRIDES,
}
#: Never imported by a render: the frameworks themselves and the heavy optional dependencies.
HEAVY = frozenset(
    {
        "verl",
        "openrlhf",
        "nemo_rl",
        "torch",
        "vllm",
        "transformers",
        "hydra",
        "omegaconf",
        "ray",
        "kubernetes",
        "rich",
    }
)
#: Start-up that only other verbs (or --debug, or a maintainer command) need.
NOT_AT_START = (
    "rladapt.cli.runs",
    "rladapt.cli.compat",
    "rladapt.cli.inspect",
    "rladapt.compat.generate",
    "rladapt.launch",  # the runner: render_spec lives in rladapt.pipeline
    "rladapt.runs",  # the run store: built-in launchers import it once a run exists
    "rladapt.launchers.kubernetes.cluster",  # the kubernetes launcher's client and renderer: on first use
    "rladapt.launchers.kubernetes.manifest",
    "urllib.request",
    "http.client",
    "ssl",
    "traceback",
)

#: Each adapter's package -> the modules that only its own framework's render needs (imported on first use).
ADAPTER_MODULES = {
    "verl": ("rladapt.adapters.verl.translate", "rladapt.adapters.verl.validate"),
    "openrlhf": (
        "rladapt.adapters.openrlhf.translate",
        "rladapt.adapters.openrlhf.validate",
        "rladapt.adapters.openrlhf.parser",
        "rladapt.adapters.openrlhf.checks",
    ),
    "nemo-rl": ("rladapt.adapters.nemo_rl.translate", "rladapt.adapters.nemo_rl.validate"),
}

PROBE = """
import json, sys
from rladapt.cli import main
try:
    main(json.loads(sys.argv[1]))
except SystemExit as exc:
    if exc.code:
        raise
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _render_modules(framework: str, overrides: list[str]) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "RLADAPT_DEEP_CHECK"}
    argv = ["render", "-f", framework, GSM8K, *overrides]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"# {framework.replace('==', ' ')}"), done.stdout[:200]
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("framework", sorted(CASES))
def test_render_imports_no_framework_and_nothing_heavy(framework: str) -> None:
    modules = _render_modules(framework, CASES[framework])
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == [], f"render -f {framework} imported {heavy}"


@pytest.mark.parametrize("framework", sorted(CASES))
def test_render_starts_without_other_verbs_modules(framework: str) -> None:
    modules = _render_modules(framework, CASES[framework])
    eager = sorted(m for m in NOT_AT_START if m in modules)
    assert eager == [], f"render -f {framework} imported {eager} at start-up"
    assert "rladapt.cli.spec" in modules  # the verb's own module: the probe ran the real command


@pytest.mark.parametrize("framework", sorted(CASES))
def test_render_loads_only_its_own_adapter(framework: str) -> None:
    modules = _render_modules(framework, CASES[framework])
    name = framework.split("==")[0]
    others = sorted(
        m for other, lazy in ADAPTER_MODULES.items() if other != name for m in lazy if m in modules
    )
    assert others == [], f"render -f {framework} imported other adapters' modules {others}"
    assert f"{ADAPTER_MODULES[name][0]}" in modules  # its own translator did run


def test_lazy_adapter_modules_stay_reachable_as_attributes() -> None:
    """``rladapt.adapters.<name>.translate`` / ``.validate`` load on first attribute access, as when eager."""
    probe = (
        "import rladapt.adapters.openrlhf as pkg, sys\n"
        "assert 'rladapt.adapters.openrlhf.translate' not in sys.modules\n"
        "print(pkg.translate.__name__, pkg.validate.__name__)\n"
        "try:\n    pkg.nope\nexcept AttributeError as exc:\n    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "rladapt.adapters.openrlhf.translate rladapt.adapters.openrlhf.validate",
        "module 'rladapt.adapters.openrlhf' has no attribute 'nope'",
    ]


def test_lazy_kubernetes_reexports_resolve() -> None:
    """Every public name of the kubernetes launcher resolves, though its client and renderer load lazily."""
    probe = (
        "import rladapt.launchers.kubernetes as k, sys\n"
        "assert 'rladapt.launchers.kubernetes.manifest' not in sys.modules\n"
        "from rladapt.launchers.kubernetes import manifest, cluster\n"
        "for name in k.__all__:\n"
        "    value = getattr(k, name)\n"
        "    owner = getattr(manifest, name, getattr(cluster, name, value))\n"
        "    assert value is owner, name\n"
        "print(len(k.__all__))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "12"


def test_lazy_verb_table_matches_what_each_module_registers() -> None:
    """A verb missing from LAZY_VERBS (or mapped to the wrong module) would vanish from the CLI."""
    import importlib

    for module in sorted(set(LAZY_VERBS.values())):
        group = click.Group()
        importlib.import_module(f"rladapt.cli.{module}").register(group)
        listed = sorted(verb for verb, owner in LAZY_VERBS.items() if owner == module)
        assert sorted(group.commands) == listed, module


def test_a_misspelled_verb_still_gets_a_suggestion() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rladapt.cli", "rendr"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "No such command 'rendr'. Did you mean 'render'?" in done.stderr


def test_help_lists_every_verb() -> None:
    with click.Context(cli) as ctx:
        assert set(LAZY_VERBS) <= set(cli.list_commands(ctx))


def test_lazy_package_faces_resolve_every_name() -> None:
    """``rladapt.primitives`` and ``rladapt.plugins`` load their heavy modules on first use of a name: importing
    one of their light modules (as every verb does) loads neither pydantic's spec models nor the registry, and every
    public name still resolves to the object of the module that defines it."""
    probe = (
        "import sys\n"
        "import rladapt.primitives.errors, rladapt.plugins.launcher\n"
        "heavy = ('rladapt.primitives.spec', 'rladapt.primitives.loading', 'rladapt.plugins.registry',\n"
        "         'rladapt.plugins.native', 'rladapt.compat.schema', 'pluggy', 'pydantic', 'yaml')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "import rladapt.primitives as primitives, rladapt.plugins as plugins\n"
        "from rladapt.primitives import loading, spec\n"
        "assert primitives.RLJob is spec.RLJob and primitives.load_job is loading.load_job\n"
        "for package in (primitives, plugins):\n"
        "    for name in package.__all__:\n"
        "        value = getattr(package, name)\n"
        "        owner = getattr(value, '__module__', None)\n"
        "        if owner and owner.startswith('rladapt.') and hasattr(sys.modules[owner], name):\n"
        "            assert getattr(sys.modules[owner], name) is value, (package.__name__, name)\n"
        "    assert name in dir(package)\n"
        "try:\n    plugins.nope\nexcept AttributeError as exc:\n    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "module 'rladapt.plugins' has no attribute 'nope'"]
