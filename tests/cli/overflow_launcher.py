"""``python -m tests.cli.overflow_launcher ARGS...``: the real CLI with one more launcher installed.

The launcher, ``overflow``, is a plugin whose render multiplies two finite options into infinity, as a plugin's
arithmetic can: every option it was given was good, yet its request holds a number JSON cannot hold. It stands
for what no built-in launcher does, so that ``render --format json`` can be shown to refuse rather than print
``Infinity``.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from rladapt.plugins import Artifacts, Command, Launcher, NativeLaunch, RunStatus, hookimpl
from rladapt.plugins.launcher import Option


class OverflowLauncher(Launcher):
    PLUGIN_NAME = "overflow"
    OPTIONS: ClassVar[tuple[Option, ...]] = (
        Option("bytes_per_gpu", float, "memory per GPU", default=1e308, minimum=0),
        Option("gpus", float, "GPUs", default=8.0, minimum=0),
    )

    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        opts = self.merge_options(native, options)
        return Artifacts(self.PLUGIN_NAME, request={"memory": opts["bytes_per_gpu"] * opts["gpus"]})

    # Only render is exercised: the refusal happens before anything would be submitted.
    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        raise NotImplementedError("the overflow launcher only renders")

    def status(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        raise NotImplementedError("the overflow launcher only renders")

    def logs(self, handle: dict[str, Any], run_dir: Path, follow: bool = False) -> Iterator[str]:
        raise NotImplementedError("the overflow launcher only renders")

    def stop(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        raise NotImplementedError("the overflow launcher only renders")


class OverflowPlugin:
    @hookimpl
    def rladapt_register_launchers(self) -> list[Launcher]:
        return [OverflowLauncher()]


def main() -> None:
    import rladapt.plugins
    from rladapt.cli import main as cli_main

    registry = rladapt.plugins.load_registry(extra=[("overflow", OverflowPlugin())])
    # the verbs look the registry up through the public face's cached get_registry
    rladapt.plugins.get_registry = lru_cache(maxsize=1)(lambda: registry)
    cli_main()


if __name__ == "__main__":
    main()
