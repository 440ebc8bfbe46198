"""``python -m tests.launchers.launch_and_die ARGS...``: the rladapt CLI with the test plugins, in a real process
that SIGKILLs itself at the moment named by ``$RLADAPT_TEST_DIE_AT`` (tests only; rladapt has no fault hooks).

- ``after-submit``: right after the local launcher's ``submit`` returned (the job is forked, no handle saved);
- ``saving-handle``: while ``run.json`` with the handle is being written (its temp file is full, not renamed);
- unset: no kill, the CLI runs as it is.

``$RLADAPT_TEST_PYTHON``, when set, is the job's interpreter (a slow one makes the local preflight last).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from rladapt.plugins import NativeLaunch, hookimpl
from rladapt.primitives import RLJob
from tests.launchers.conftest import EngineStubPlugin


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class _Interpreter(EngineStubPlugin):
    @hookimpl
    def rladapt_modify_native(self, native: NativeLaunch, job: RLJob) -> NativeLaunch:
        stubbed = super().rladapt_modify_native(native, job)
        python = os.environ.get("RLADAPT_TEST_PYTHON")
        return stubbed.model_copy(update={"argv": (python, *stubbed.argv[1:])}) if python else stubbed


def _arm(moment: str) -> None:
    if moment == "after-submit":
        from rladapt.launchers.local import LocalLauncher

        submit = LocalLauncher.submit

        def submit_then_die(self: LocalLauncher, *args: Any, **kwargs: Any) -> dict[str, Any]:
            submit(self, *args, **kwargs)
            _die()
            raise AssertionError("unreachable")

        LocalLauncher.submit = submit_then_die  # type: ignore[method-assign]
    elif moment == "saving-handle":
        replace = os.replace

        def replace_or_die(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
            if str(dst).endswith("run.json") and '"handle": {' in Path(src).read_text(encoding="utf-8"):
                _die()
            replace(src, dst, *args, **kwargs)

        os.replace = replace_or_die
    elif moment:
        raise SystemExit(f"unknown RLADAPT_TEST_DIE_AT {moment!r}")


def main() -> None:
    import rladapt.plugins
    from rladapt.cli import main as cli_main

    registry = rladapt.plugins.load_registry(extra=[("engine-stub", _Interpreter())])
    rladapt.plugins.get_registry = lambda: registry  # type: ignore[assignment]
    _arm(os.environ.get("RLADAPT_TEST_DIE_AT", ""))
    cli_main(sys.argv[1:])


if __name__ == "__main__":
    main()
