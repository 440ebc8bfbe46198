"""A plain ``pip install rladapt`` (no extra) imports and diffs a launch of every framework that can import, and
says nothing on stderr but its own ``note:`` lines (issue 22: NeMo-RL ended in ``internal error:
ModuleNotFoundError: No module named 'hydra'``, and OmegaConf printed a deprecation warning on every import).

One fresh venv for the module: the wheel a checkout builds, installed with its dependencies from the package index
as a user's ``pip install`` resolves them. The test suite's own venv has every extra, so it cannot see this."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rladapt.plugins import load_registry
from tests.adapters.nemo_rl.conftest import tag
from tests.conftest import REPO
from tests.importing import test_nemo_rl_import, test_openrlhf_import, test_verl_import

pytestmark = pytest.mark.xdist_group("plain-install")  # one venv per run, not one per worker

#: framework -> (a launch script, the version it is written for)
LAUNCHES = {
    "verl": (test_verl_import.SCRIPT, "0.9.1"),
    "openrlhf": (test_openrlhf_import.PPO_DOTTED, "0.11.2"),
    "nemo-rl": (test_nemo_rl_import.script("0.7.0"), "0.7.0"),
}


OMEGACONF_24 = "omegaconf==2.4.0"


@pytest.fixture(scope="module")
def plain(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` of a fresh venv holding the wheel and its base dependencies only."""
    venv = tmp_path_factory.mktemp("plain-install") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    res = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=900,
        env=_clean_env(),
    )
    assert res.returncode == 0, f"pip install {wheel.name} failed:\n{res.stderr[-3000:]}"
    return venv / "bin"


def _clean_env(**extra: str) -> dict[str, str]:
    # the suite runs with PYTHONPATH at the checkout: the venv must import its own installed rladapt
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    return {**env, **extra}


def _rladapt(bin_dir: Path, args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "rladapt"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=_clean_env(**env),
    )


def _own_lines_only(stderr: str) -> list[str]:
    """What stderr holds besides rladapt's own notes (a warning, a traceback)."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("note: ")]


def _where(framework: str, tmp_path: Path) -> Path:
    # a NeMo-RL launch names its configs relative to the checkout it runs in
    return tag("0.7.0").root if framework == "nemo-rl" else tmp_path


def _import_and_diff(bin_dir: Path, framework: str, tmp_path: Path, **env: str) -> None:
    text, version = LAUNCHES[framework]
    launch = tmp_path / "run.sh"
    launch.write_text(text, encoding="utf-8")
    pinned = f"{framework}=={version}"
    cwd = _where(framework, tmp_path)
    imported = _rladapt(bin_dir, ["import", "-f", pinned, str(launch)], cwd, **env)
    assert imported.returncode == 0, imported.stderr
    assert _own_lines_only(imported.stderr) == []
    assert imported.stdout.startswith(("#", "apiVersion")), imported.stdout[:200]
    spec = tmp_path / "job.yaml"
    spec.write_text(imported.stdout, encoding="utf-8")
    diffed = _rladapt(bin_dir, ["diff", "-f", pinned, str(spec), str(launch)], cwd, **env)
    assert diffed.returncode == 0, diffed.stdout + diffed.stderr
    assert "same effective configuration" in diffed.stdout
    assert _own_lines_only(diffed.stderr) == []


def test_every_framework_that_can_import_is_tried() -> None:
    registry = load_registry(use_entry_points=False)
    importing = {
        name for name, entry in registry.frameworks.items() if entry.obj.launch_importer() is not None
    }
    assert importing == set(LAUNCHES)


def test_the_plain_install_holds_no_extra(plain: Path) -> None:
    listed = subprocess.run(
        [str(plain / "python"), "-m", "pip", "list", "--format", "freeze"],
        capture_output=True,
        text=True,
        check=True,
        env=_clean_env(),
    ).stdout.lower()
    names = {line.split("==")[0] for line in listed.splitlines()}
    assert "hydra-core" in names  # the base dependency NeMo-RL's import needs
    assert not names & {"tensorboard", "matplotlib", "ray", "kubernetes", "trl", "torch", "verl", "openrlhf"}


@pytest.mark.parametrize("framework", list(LAUNCHES))
def test_a_plain_install_imports_and_diffs(plain: Path, framework: str, tmp_path: Path) -> None:
    _import_and_diff(plain, framework, tmp_path)


def test_nemo_rl_import_is_quiet_on_the_newest_omegaconf(plain: Path, tmp_path: Path) -> None:
    """OmegaConf 2.4 deprecates ``register_new_resolver`` (a UserWarning on every NeMo-RL import that registers
    its resolvers); hydra-core 1.3 still caps OmegaConf below 2.4, so 2.4 is put in front of the venv's own
    packages (PYTHONPATH) instead of changing the venv the other tests share."""
    overlay = tmp_path / "omegaconf-2.4"
    # the first OmegaConf release that deprecates register_new_resolver
    res = subprocess.run(
        [
            str(plain / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(overlay),
            OMEGACONF_24,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=_clean_env(),
    )
    assert res.returncode == 0, res.stderr[-2000:]
    version = subprocess.run(
        [str(plain / "python"), "-c", "import omegaconf; print(omegaconf.__version__)"],
        capture_output=True,
        text=True,
        env=_clean_env(PYTHONPATH=str(overlay)),
    ).stdout.strip()
    assert version == "2.4.0"
    work = tmp_path / "work"
    work.mkdir()
    _import_and_diff(plain, "nemo-rl", work, PYTHONPATH=str(overlay))


def test_a_kubernetes_dry_run_without_the_extra_names_it(plain: Path, tmp_path: Path) -> None:
    """Issue 24: the README's Kubernetes line did not say the launcher needs the ``kubernetes`` extra. Without it
    a dry run is a usage error naming the extra (exit 2), never a traceback."""
    spec = tmp_path / "job.yaml"
    spec.write_text((REPO / "examples" / "grpo-gsm8k.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    for name in ("data/gsm8k/train.parquet", "data/gsm8k/test.parquet", "rewards/gsm8k.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")  # the files the spec names are there
    args = [
        "launch",
        "-f",
        "verl",
        str(spec),
        "-l",
        "kubernetes",
        "-o",
        "image=registry.example/rl:1",
        "--dry-run",
    ]
    res = _rladapt(plain, args, tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "pip install 'rladapt[kubernetes]'" in res.stderr
    assert res.stdout == "" and "Traceback" not in res.stderr


def test_the_pool_publishes_and_verifies_without_an_extra_and_serve_names_its_extra(
    plain: Path, tmp_path: Path
) -> None:
    """Issue 26: the store needs nothing beyond the base install; serving with the reference engine needs the
    ``engine`` extra and says so once (exit 2), before any replica starts."""
    pool = str(tmp_path / "pool")
    model = str(REPO / "examples" / "tiny" / "model")
    published = _rladapt(plain, ["pool", "publish", model, "--alias", "serving"], tmp_path, RLADAPT_POOL=pool)
    assert (published.returncode, published.stdout.strip()) == (0, "published v00000001 (alias serving)"), (
        published.stderr
    )
    verified = _rladapt(plain, ["pool", "verify", "serving"], tmp_path, RLADAPT_POOL=pool)
    assert (verified.returncode, verified.stdout.strip()) == (0, "v00000001: ok"), verified.stderr
    served = _rladapt(plain, ["pool", "serve", "--alias", "serving"], tmp_path, RLADAPT_POOL=pool)
    assert served.returncode == 2, served.stdout + served.stderr
    assert "install 'rladapt[engine]'" in served.stderr and "Traceback" not in served.stderr
    assert not (tmp_path / "pool" / "serving" / "serving.json").exists()
