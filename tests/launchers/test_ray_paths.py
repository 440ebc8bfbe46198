"""What the ray launcher checks of the paths a job reads, before it submits (no cluster needed).

The upload emulation is compared with Ray's own walk of a working directory (``_dir_travel`` with the excludes and
ignore files it applies, ray 2.60 ``ray/_private/runtime_env/packaging.py`` and ``working_dir.py``).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rladapt.launchers.ray import RayLauncher
from rladapt.launchers.ray_upload import RAY_DEFAULT_EXCLUDES, Upload
from rladapt.pipeline import render_native
from rladapt.plugins import load_registry
from rladapt.plugins.launcher import render_artifacts
from rladapt.primitives import SpecError, load_job
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "grpo-tiny-trl.yaml"
RAY = ["-l", "ray", "-o", "address=http://127.0.0.1:9"]


def ray_request(overrides: list[str], options: dict[str, str]) -> dict[str, Any]:
    native = render_native(load_job(EXAMPLE, overrides), "trl", load_registry()).native
    return render_artifacts(RayLauncher(), native, options).request


def dry_run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rladapt.cli", "launch", "-f", "trl", "--dry-run", str(EXAMPLE), *RAY, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_the_readme_interpreter_left_out_of_the_upload_is_refused_naming_the_rule_and_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    res = dry_run()
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "spec.runtime.python: '.venv/bin/python' is left out of Ray's upload" in res.stderr
    assert "Ray's default exclude '.venv'" in res.stderr
    assert "-o shared=DIR" in res.stderr


def test_with_the_working_directory_shared_the_interpreter_runs_from_there_and_the_weights_are_shipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    request = ray_request([], {"shared": str(REPO)})
    argv = shlex.split(str(request["entrypoint"]))
    assert argv[0] == str(REPO / ".venv" / "bin" / "python")
    runtime_env = request["runtime_env"]
    assert isinstance(runtime_env, dict)
    excludes = runtime_env["excludes"]
    assert "*.safetensors" in excludes and excludes[-1] == "!/examples/tiny/model/model.safetensors"
    notes = "\n".join(request["paths"])
    assert "runs it from the shared storage" in notes and "examples/tiny/model/model.safetensors" in notes
    # and the emulated upload now ships the weights, as Ray's walk would
    upload = Upload(REPO, list(excludes))
    assert upload.dropped_by("examples/tiny/model/model.safetensors") is None


def test_an_absolute_path_must_be_on_declared_shared_storage(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(REPO)
    model = f"spec.model.path={tmp_path / 'model'}"
    (tmp_path / "model").mkdir()
    # an interpreter outside the checkout wherever the suite's own venv is (CI makes it inside the checkout)
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    with pytest.raises(SpecError) as refused:
        ray_request([model, f"spec.runtime.python={python}"], {"shared": str(REPO)})
    paths = {p.path: p.message for p in refused.value.problems}
    assert (
        "outside the working directory Ray uploads, on no declared shared storage" in paths["spec.model.path"]
    )
    assert "spec.runtime.python" in paths
    shared = f"{REPO},{tmp_path}"
    ray_request([model, f"spec.runtime.python={python}"], {"shared": shared})  # accepted


def test_a_relative_shared_directory_is_a_usage_error() -> None:
    res = dry_run("-o", "shared=examples")
    assert res.returncode == 2
    assert "shared='examples': expected absolute directories" in res.stderr


def test_a_gitignored_file_the_job_reads_is_refused_naming_the_rule(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "prompts.jsonl").write_text("{}\n")
    (tmp_path / "data" / ".gitignore").write_text("*.jsonl\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as refused:
        ray_request(
            ["spec.data.train=[data/prompts.jsonl]", "spec.runtime.python=python3", "spec.model.path=Qwen/Qwen3-0.6B",
             "spec.reward.function.path=r.py"],
            {},
        )  # fmt: skip
    (problem,) = refused.value.problems
    assert problem.path == "spec.data.train[0]"
    assert "the data/.gitignore rule '*.jsonl'" in problem.message


TREE = [
    "keep.py",
    ".venv/bin/python",
    "venv/lib/x.py",
    "sub/venv/y.py",
    "__pycache__/a.pyc",
    "sub/__pycache__/b.pyc",
    "model/model.safetensors",
    "model/config.json",
    "deep/a/b/w.bin",
    "data/train.parquet",
    "data/keep.parquet",
    "ck/run/step.pt",
    "outputs/x.txt",
    "sub/outputs/y.txt",
    "logs/a.log",
    "logs/keep.log",
    "ign/secret.txt",
    "ign/other.md",
    "docs/x[1].md",
]
EXCLUDES = [
    "/.git/",
    "/ck/",
    "outputs/",
    "*.safetensors",
    "**/*.bin",
    "*.parquet",
    "logs/*.log",
    "!/data/keep.parquet",
    "!/model/model.safetensors",
    "!logs/keep.log",
]


def test_the_upload_emulation_ships_what_rays_own_walk_ships(tmp_path: Path) -> None:
    packaging = pytest.importorskip("ray._private.runtime_env.packaging", reason="the ray extra")
    for name in TREE:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / "ign" / ".gitignore").write_text("secret.txt\n")
    (tmp_path / ".rayignore").write_text("docs/\n")

    shipped: set[str] = set()

    def handler(path: Path) -> None:
        if path.is_file():
            shipped.add(path.relative_to(tmp_path).as_posix())

    excludes = [packaging._get_excludes(tmp_path, [*RAY_DEFAULT_EXCLUDES, *EXCLUDES])]
    packaging._dir_travel(tmp_path, excludes, handler, include_gitignore=True)
    upload = Upload(tmp_path, EXCLUDES, env={})
    emulated = {name for name in TREE if upload.dropped_by(name) is None}
    assert emulated == shipped - {".rayignore", "ign/.gitignore"}  # the ignore files themselves travel too
    assert "model/model.safetensors" in shipped and "data/keep.parquet" in shipped  # the negations work
    assert "deep/a/b/w.bin" not in shipped and "sub/venv/y.py" not in shipped


# --- what the job writes and others read (issue 27's pool store and evaluator on Ray) ------------------------

SUITE_FILE = "examples/tiny/val.jsonl"


def continuous(follow: str = "pool", data: str = SUITE_FILE) -> str:
    return (
        f"spec.eval.continuous={{follow: {follow}, suites: [{{name: s, data: [{data}], "
        "scorer: {function: {path: examples/tiny/reward.py, name: share_of_a}}}]}"
    )


def test_a_relative_pool_store_is_refused_naming_the_path_and_where_it_would_be_shared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The publisher would write it in the job's own copy of the upload, which neither rladapt here nor the
    evaluator's and serving group's Ray jobs (copies of their own) see: refused, at render (the dry run too)."""
    monkeypatch.chdir(REPO)
    with pytest.raises(SpecError) as refused:
        ray_request(["spec.pool.store=pool"], {"shared": str(REPO)})
    assert refused.value.exit_code == 2
    (problem,) = refused.value.problems
    assert problem.path == "spec.pool.store"
    assert (
        "'pool' is relative: the job would write it in its own copy of the working directory"
        in problem.message
    )
    assert repr(str(REPO / "pool")) in problem.message and "-o shared=DIR" in problem.message
    res = dry_run("-o", f"shared={REPO}", "spec.pool.store=pool")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "spec.pool.store: 'pool' is relative" in res.stderr


def test_an_absolute_pool_store_must_be_on_declared_shared_storage(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(REPO)
    store = f"spec.pool.store={tmp_path / 'pool'}"
    with pytest.raises(SpecError) as refused:
        ray_request([store], {"shared": str(REPO)})
    (problem,) = refused.value.problems
    assert problem.path == "spec.pool.store" and "on no declared shared storage" in problem.message
    request = ray_request([store], {"shared": f"{REPO},{tmp_path}"})  # accepted
    assert request["shared"] == [str(REPO), str(tmp_path)]
    ray_request(["spec.pool.store=memory://pool"], {"shared": str(REPO)})  # a URL: the store's own business


def test_the_evaluator_s_files_are_judged_like_every_input(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Suite data and scorer files in the working directory are shipped with the upload the evaluator's own Ray
    job gets too; one outside it must be on shared storage."""
    monkeypatch.chdir(REPO)
    pool = f"spec.pool.store={tmp_path / 'pool'}"
    ck = f"spec.checkpoint.dir={tmp_path / 'ck'}"
    shared = {"shared": f"{REPO},{tmp_path}"}
    request = ray_request([pool, ck, continuous()], shared)
    (evaluator,) = request["services"]
    assert evaluator["request"]["runtime_env"]["working_dir"] == request["runtime_env"]["working_dir"]
    outside = tmp_path.parent / f"{tmp_path.name}-suite.jsonl"
    outside.write_text('{"prompt": "a"}\n')
    with pytest.raises(SpecError) as refused:
        ray_request([pool, ck, continuous(data=str(outside))], shared)
    paths = {p.path: p.message for p in refused.value.problems}
    assert list(paths) == ["spec.eval.continuous.suites[0].data[0]"]
    assert "outside the working directory Ray uploads, on no declared shared storage" in next(
        iter(paths.values())
    )


def test_a_checkpoint_directory_the_evaluator_reads_must_be_shared_and_otherwise_is_a_warning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The evaluator (its own Ray job) reads the checkpoints and writes its results under them: off shared storage
    that is refused. Without it, a checkpoint directory only the job's node sees is a warning (``--strict``
    refuses it): ``rladapt checkpoints``, ``metrics`` and ``resume`` read it from here."""
    monkeypatch.chdir(REPO)
    shared = {"shared": f"{REPO},{tmp_path}"}
    with pytest.raises(SpecError) as refused:
        ray_request([continuous(follow="checkpoints")], shared)  # the example's relative checkpoints/...
    (problem,) = refused.value.problems
    assert problem.path == "spec.checkpoint.dir" and "is relative" in problem.message
    assert repr(str(REPO / "checkpoints" / "tiny-grpo-trl")) in problem.message
    ray_request([continuous(follow="checkpoints"), f"spec.checkpoint.dir={tmp_path / 'ck'}"], shared)

    native = render_native(load_job(EXAMPLE, []), "trl", load_registry()).native
    artifacts = render_artifacts(RayLauncher(), native, shared)
    (warning,) = artifacts.warnings
    assert warning.startswith("spec.checkpoint.dir 'checkpoints/tiny-grpo-trl' is relative")
    on_shared = native.model_copy(update={"checkpoint_dir": str(tmp_path / "ck")})
    assert render_artifacts(RayLauncher(), on_shared, shared).warnings == []
    res = dry_run("-o", f"shared={REPO}", "--strict")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "spec.checkpoint.dir 'checkpoints/tiny-grpo-trl' is relative" in res.stderr


def test_eval_datasets_are_inputs_the_launchers_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``spec.eval.datasets`` reach the framework with the validation files: Ray judges them like data."""
    monkeypatch.chdir(REPO)
    outside = tmp_path / "extra.jsonl"
    outside.write_text('{"prompt": "a"}\n')
    with pytest.raises(SpecError) as refused:
        ray_request([f"spec.eval.datasets=[{outside}]"], {"shared": str(REPO)})
    assert [p.path for p in refused.value.problems] == ["spec.eval.datasets[0]"]
