"""``Launcher.command``: the runtime-patch wrapping every launcher gets from the base class."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rladapt.bootstrap import PATCHES_ENV, WORKER_SETUP_HOOK
from rladapt.plugins import Artifacts, Launcher, NativeLaunch, RunStatus
from rladapt.plugins.launcher import Command, render_artifacts

NATIVE_ARGV = ("python3", "-m", "toy.train", "--steps=3", "x y")


class SshLauncher(Launcher):
    """A third-party launcher written against the contract alone: it runs what ``command`` gives it."""

    PLUGIN_NAME = "ssh-example"

    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in command.env.items())
        return Artifacts(
            launcher=self.PLUGIN_NAME,
            request={"remote": f"env {env} {shlex.join(command.argv)}", "ray": command.ray_runtime_env},
        )

    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        return {}

    def status(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        return RunStatus("UNKNOWN")

    def logs(self, handle: dict[str, Any], run_dir: Path, follow: bool = False) -> Iterator[str]:
        return iter(())

    def stop(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        return RunStatus("STOPPED")


def native(**update: Any) -> NativeLaunch:
    return NativeLaunch(
        **{"framework": "toy", "version": "1.0", "job_name": "toy", "argv": NATIVE_ARGV, **update}
    )


def test_a_third_party_launcher_runs_the_framework_patched() -> None:
    launch = native(runtime_patches=("toy_patches:fix_seed", "toy_patches:fix_io"))
    command = SshLauncher().command(launch)
    assert command == Command(
        argv=(
            "python3",
            "-m",
            "rladapt.bootstrap",
            "--patch",
            "toy_patches:fix_seed",
            "--patch",
            "toy_patches:fix_io",
            "--",
            *NATIVE_ARGV,
        ),
        env={PATCHES_ENV: "toy_patches:fix_seed,toy_patches:fix_io"},
        ray_runtime_env={"worker_process_setup_hook": WORKER_SETUP_HOOK},
    )
    assert command.python == "python3"
    request = render_artifacts(SshLauncher(), launch, {}).request
    words = shlex.split(request["remote"])
    assert words[:2] == ["env", f"{PATCHES_ENV}=toy_patches:fix_seed,toy_patches:fix_io"]
    assert words[2:5] == ["python3", "-m", "rladapt.bootstrap"]
    assert words[-len(NATIVE_ARGV) :] == list(NATIVE_ARGV)
    assert request["ray"] == {"worker_process_setup_hook": WORKER_SETUP_HOOK}


def test_without_runtime_patches_the_command_is_the_bare_bootstrap() -> None:
    command = SshLauncher().command(native())
    assert command.argv == ("python3", "-m", "rladapt.bootstrap", "--", *NATIVE_ARGV)
    assert command.env == {} and command.ray_runtime_env == {}


def test_a_native_python_runs_the_bootstrap() -> None:
    command = SshLauncher().command(native(argv=("/opt/venv/bin/python3.11", "train.py")))
    assert command.argv == (
        "/opt/venv/bin/python3.11",
        "-m",
        "rladapt.bootstrap",
        "--",
        "/opt/venv/bin/python3.11",
        "train.py",
    )
    assert SshLauncher().command(native(argv=("torchrun", "train.py"))).python == "python3"
