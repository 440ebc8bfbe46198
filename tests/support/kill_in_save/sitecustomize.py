"""Test-only fault injection (a fake of a node dying mid-save, which cannot be timed from outside): SIGKILL the
process while transformers' ``Trainer`` writes ``checkpoint-$RLADAPT_TEST_KILL_STEP``, once.

Python imports ``sitecustomize`` at start-up from ``PYTHONPATH``. The kill comes in ``Trainer._save_rng_state``:
the weights, ``optimizer.pt`` and ``scheduler.pt`` of that step are on disk, ``rng_state.pth`` and
``trainer_state.json`` are not (the order of ``Trainer._save_checkpoint``, transformers 4.57.6). The marker file
``$RLADAPT_TEST_KILL_MARK`` makes it happen once: a restarted attempt saves normally. With
``RLADAPT_TEST_KILL_MODE=hold`` the process waits there instead (until something else kills it: a requeue), so a
test can act at the exact moment a save is under way. transformers is patched when
it is first imported, so processes that never train (the bootstrap) pay nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import signal
import sys
import time
from types import ModuleType
from typing import Any

_MARK = os.environ.get("RLADAPT_TEST_KILL_MARK")
_STEP = os.environ.get("RLADAPT_TEST_KILL_STEP", "")
_HOLD = os.environ.get("RLADAPT_TEST_KILL_MODE") == "hold"


def _patch(module: ModuleType) -> None:
    original = module.Trainer._save_rng_state

    def save_rng_state(self: Any, output_dir: str) -> Any:
        if _MARK and output_dir.endswith(f"checkpoint-{_STEP}") and not os.path.exists(_MARK):
            open(_MARK, "w").close()
            if _HOLD:
                time.sleep(3600)
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, output_dir)

    module.Trainer._save_rng_state = save_rng_state


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name != "transformers.trainer":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            run(module)
            _patch(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if _MARK:
    sys.meta_path.insert(0, _Finder())
