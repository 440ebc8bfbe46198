"""Render with the offline schema-snapshot check vs `python -c pass` and vs the deep check it replaces, same run.

For each framework: median wall time and median CPU time (user + system, of the child process) of `rladapt
render` (snapshot check only, the default), its overhead over a bare interpreter and the ratio to it, and which
framework modules it imported (none expected). Where the framework's own schema is given (verl: an unpacked wheel
for Hydra composition; OpenRLHF: its wheel for the real parser), also `rladapt render --deep-check` and the
ratio deep / snapshot, for the whole command and for the check alone in a fresh process. The commands run
interleaved (one round of every command, N rounds), so a change in the machine's load hits them all alike; on a
shared machine the CPU figures are the steadier ones (wall time also counts waiting for a core).
Targets: overhead < 0.3 s for every framework, snapshot >= 3x faster than the Hydra-composition check.

    .venv/bin/python benchmarks/bench_render_snapshot.py [--runs 9] [--verl-package DIR] [--openrlhf-wheel WHL]
        [--against-tree DIR]

Without --verl-package / --openrlhf-wheel the wheels are taken from the test cache (downloaded once with pip).
--against-tree DIR also times the render of another rladapt source tree in the same rounds (before/after),
e.g. DIR made with `git archive main | tar -x -C DIR`; it runs with this interpreter and PYTHONPATH=DIR.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
TARGET_OVERHEAD_S = 0.3
TARGET_RATIO = 3.0
NEMO_OVERRIDES = [
    "spec.reward.function=null",
    "spec.reward.model={path: Skywork/Skywork-Reward-V2-Qwen3-0.6B, micro_batch_per_gpu: 2}",
    "spec.data.train=[data/gsm8k/train.jsonl]",
    "spec.data.val=[data/gsm8k/test.jsonl]",
    "spec.placement.pools=[{name: all, nodes: 1, gpus_per_node: 8, roles: [actor, rollout, ref]},"
    "{name: rm, nodes: 1, gpus_per_node: 8, roles: [reward]}]",
]
CASES: dict[str, tuple[str, list[str]]] = {
    "verl==0.9.1": ("grpo-gsm8k.yaml", []),
    "openrlhf==0.11.2": ("grpo-gsm8k.yaml", []),
    "nemo-rl==0.7.0": ("grpo-gsm8k.yaml", NEMO_OVERRIDES),
}
FRAMEWORK_MODULES = ("verl", "openrlhf", "nemo_rl", "hydra", "torch", "ray")
BASE_ENV = {
    k: v
    for k, v in os.environ.items()
    if k
    not in (
        "PYTHONDONTWRITEBYTECODE",
        "RLADAPT_DEEP_CHECK",
        "RLADAPT_VERL_CONFIG_DIR",
        "RLADAPT_OPENRLHF_SOURCE",
    )
}


@dataclass(frozen=True)
class Timing:
    wall: float  # median seconds
    cpu: float  # median seconds of user + system time of the child


@dataclass(frozen=True)
class Command:
    argv: list[str]
    env: dict[str, str]
    #: ``python -m`` puts the working directory first on sys.path, ahead of PYTHONPATH: a tree's own render
    #: must run from that tree, or every command imports this checkout's rladapt.
    cwd: Path = REPO


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_together(commands: dict[str, Command], runs: int) -> dict[str, Timing]:
    """Median wall and CPU time of each command, run in ``runs`` interleaved rounds after one warm-up round."""
    for command in commands.values():  # warm-up: bytecode caches, the page cache
        subprocess.run(command.argv, check=True, capture_output=True, env=command.env, cwd=command.cwd)
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            cpu_before = _children_cpu()
            start = time.perf_counter()
            subprocess.run(command.argv, check=True, capture_output=True, env=command.env, cwd=command.cwd)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(_children_cpu() - cpu_before)
    return {name: Timing(statistics.median(wall[name]), statistics.median(cpu[name])) for name in commands}


def render_argv(framework: str, deep: bool = False) -> list[str]:
    example, overrides = CASES[framework]
    return [
        sys.executable,
        "-m",
        "rladapt.cli",
        "render",
        "-f",
        framework,
        *(["--deep-check"] if deep else []),
        str(EXAMPLES / example),
        *overrides,
    ]


def imported(framework: str) -> list[str]:
    example, overrides = CASES[framework]
    probe = (
        "import sys\n"
        "from rladapt.pipeline import render_native\n"
        "from rladapt.plugins import get_registry\n"
        "from rladapt.primitives import load_job\n"
        f"render_native(load_job({str(EXAMPLES / example)!r}, {overrides!r}), {framework!r}, get_registry())\n"
        f"print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(FRAMEWORK_MODULES)!r}))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True, env=BASE_ENV
    )
    return out.stdout.split()


def check_alone(framework: str, runs: int) -> float:
    """In-process median of the snapshot check of one rendered launch (snapshot already loaded)."""
    from rladapt.pipeline import parse_framework, render_native
    from rladapt.plugins import get_registry
    from rladapt.primitives import load_job

    example, overrides = CASES[framework]
    registry = get_registry()
    native = render_native(
        load_job(EXAMPLES / example, overrides), framework, registry, deep_check=False
    ).native
    adapter = registry.framework(parse_framework(framework)[0])
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        assert adapter.check_native(native) == []
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def load_alone(framework: str, runs: int) -> float:
    """Median time to read and parse one version's snapshot file (the lazy load a render pays once)."""
    from rladapt.plugins import get_registry

    name, _, version = framework.partition("==")
    samples = []
    for _ in range(runs):
        # a fresh adapter: nothing of its snapshots loaded yet
        adapter = type(get_registry().framework(name))()
        start = time.perf_counter()
        adapter.find_snapshot(version)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cold_check(framework: str, deep: bool, env: dict[str, str], runs: int) -> float:
    """Median time of one native check in a fresh process (imports and file loads included), launch rendered
    beforehand: the snapshot check (``check_native``) or the deep check (``validate_native``)."""
    example, overrides = CASES[framework]
    probe = (
        "import time\n"
        "from rladapt.pipeline import parse_framework, render_native\n"
        "from rladapt.plugins import get_registry\n"
        "from rladapt.primitives import load_job\n"
        "reg = get_registry()\n"
        f"native = render_native(load_job({str(EXAMPLES / example)!r}, {overrides!r}), {framework!r}, reg, "
        "deep_check=False).native\n"
        f"adapter = reg.framework(parse_framework({framework!r})[0])\n"
        "adapter._snapshots = None\n"  # the render loaded the snapshot: the check pays the load, as on a cold start
        "start = time.perf_counter()\n"
        f"found = adapter.{'validate_native' if deep else 'check_native'}(native)\n"
        "assert found == [], found\n"
        "print(time.perf_counter() - start)\n"
    )
    samples = [
        float(
            subprocess.run(
                [sys.executable, "-c", probe], check=True, capture_output=True, text=True, env=env, cwd=REPO
            ).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(samples)


def deep_env(framework: str, args: argparse.Namespace) -> dict[str, str] | None:
    sys.path.insert(0, str(REPO))
    from tests.support.wheels import download_wheel, extract

    name, _, version = framework.partition("==")
    if name == "verl":
        package = (
            args.verl_package
            or extract(download_wheel("verl", version), REPO / ".cache" / "verl" / version) / "verl"
        )
        return {**BASE_ENV, "RLADAPT_VERL_CONFIG_DIR": str(package)}
    if name == "openrlhf":
        wheel = args.openrlhf_wheel or download_wheel("openrlhf", version)
        return {**BASE_ENV, "RLADAPT_OPENRLHF_SOURCE": str(wheel)}
    return None  # NeMo-RL cannot be installed next to rladapt: the snapshot check is its only one


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--verl-package", type=Path, default=None, help="an unpacked verl package directory")
    parser.add_argument("--openrlhf-wheel", type=Path, default=None, help="the openrlhf wheel of the version")
    parser.add_argument(
        "--against-tree",
        type=Path,
        default=None,
        help="another rladapt source tree to time in the same rounds",
    )
    args = parser.parse_args()

    commands = {"pass": Command([sys.executable, "-c", "pass"], BASE_ENV)}
    deep_envs: dict[str, dict[str, str]] = {}
    for framework in CASES:
        commands[framework] = Command(render_argv(framework), BASE_ENV)
        if args.against_tree is not None:
            tree = args.against_tree.resolve()
            other = {**BASE_ENV, "PYTHONPATH": str(tree)}
            commands[f"{framework} against"] = Command(render_argv(framework), other, cwd=tree)
        env = deep_env(framework, args)
        if env is not None:
            deep_envs[framework] = env
            commands[f"{framework} deep"] = Command(render_argv(framework, deep=True), env)
    times = timed_together(commands, args.runs)

    bare = times["pass"]
    print(f"python -c pass: wall {bare.wall:.3f} s, cpu {bare.cpu:.3f} s (medians of {args.runs} rounds)")
    failed = False
    for framework in CASES:
        snap = times[framework]
        overhead, cpu_overhead = snap.wall - bare.wall, snap.cpu - bare.cpu
        heavy = imported(framework)
        alone = check_alone(framework, args.runs)
        load = load_alone(framework, args.runs)
        ok = overhead < TARGET_OVERHEAD_S and not heavy
        line = (
            f"{framework:18} render wall {snap.wall:.3f} s = python -c pass + {overhead:.3f} s "
            f"({'ok' if overhead < TARGET_OVERHEAD_S else 'OVER'} < {TARGET_OVERHEAD_S} s), "
            f"{snap.wall / bare.wall:.1f}x python -c pass; "
            f"cpu {snap.cpu:.3f} s = + {cpu_overhead:.3f} s, {snap.cpu / bare.cpu:.1f}x"
            f"\n{'':18} snapshot load {load * 1000:.1f} ms + check {alone * 1000:.1f} ms; "
            f"framework modules imported: {', '.join(heavy) or 'none'}"
        )
        if args.against_tree is not None:
            against = times[f"{framework} against"]
            line += (
                f"\n{'':18} {args.against_tree.name} (same rounds): wall {against.wall:.3f} s "
                f"(+ {against.wall - bare.wall:.3f} s), cpu {against.cpu:.3f} s (+ {against.cpu - bare.cpu:.3f} s)"
            )
        if framework in deep_envs:
            deep = times[f"{framework} deep"]
            snap_cold = cold_check(framework, False, BASE_ENV, args.runs)
            deep_cold = cold_check(framework, True, deep_envs[framework], args.runs)
            ratio = deep_cold / snap_cold
            line += (
                f"\n{'':18} render --deep-check wall {deep.wall:.3f} s, cpu {deep.cpu:.3f} s: "
                f"{deep.wall / snap.wall:.1f}x the snapshot render; the check alone in a fresh process: "
                f"snapshot {snap_cold * 1000:.1f} ms, deep {deep_cold * 1000:.1f} ms: {ratio:.0f}x"
            )
            if framework.startswith("verl"):
                ok = ok and ratio >= TARGET_RATIO
                line += f" ({'ok' if ratio >= TARGET_RATIO else 'UNDER'} >= {TARGET_RATIO:.0f}x)"
        print(line)
        failed = failed or not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
