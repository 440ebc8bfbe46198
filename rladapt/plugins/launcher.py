"""The launcher contract: what ``rladapt_register_launchers`` returns.

Split as in TorchX's schedulers: ``render`` is pure and returns exactly what would be submitted (the dry run shows
it byte for byte); ``submit``, ``status``, ``logs`` and ``stop`` have the side effects. ``command`` gives a
launcher what to run, with the runtime patches already in it: a launcher runs ``Command.argv`` with
``Command.env`` added, and adds ``Command.ray_runtime_env`` to the Ray job's runtime_env where it has one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from rladapt.bootstrap import PATCHES_ENV, WORKER_SETUP_HOOK, bootstrap_argv
from rladapt.primitives.errors import UsageError

if TYPE_CHECKING:
    from .native import NativeLaunch

#: Set by ``rladapt launch`` on every render: the run id, for naming jobs and objects. A dry run has none.
RUN_ID_OPTION = "run_id"

RunState = Literal["PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "UNKNOWN"]
TERMINAL_STATES: frozenset[str] = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})


@dataclass(frozen=True)
class Artifacts:
    """What a launcher submits: files it writes (script, manifests) and the request it makes."""

    launcher: str
    files: dict[str, str] = field(default_factory=dict)
    request: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """The dry-run text: every file, verbatim, then the request as JSON."""
        import json

        parts = []
        for name, text in self.files.items():
            parts.append(f"--- {name} ---\n{text}" + ("" if text.endswith("\n") else "\n"))
        if self.request:
            parts.append(f"--- request ---\n{json.dumps(self.request, indent=2, sort_keys=True)}\n")
        return "".join(parts)


@dataclass(frozen=True)
class Command:
    """What a launcher runs for a NativeLaunch, with its runtime patches (from ``Launcher.command``).

    - ``argv``: the native argv behind ``python -m rladapt.bootstrap [--patch HOOK]... --``, which applies the
      patches in the driver process before the framework's code runs (``argv[0]`` is the job's Python);
    - ``env``: variables to add to the job's environment, the driver's and, where the launcher sets it for the
      whole cluster, every Ray node's: ``RLADAPT_RUNTIME_PATCHES`` lists the hooks for ``worker_setup``;
    - ``ray_runtime_env``: keys to add to the Ray job's runtime_env: ``worker_process_setup_hook``, so that every
      Ray worker applies the patches before it runs a task.

    Without runtime patches ``env`` and ``ray_runtime_env`` are empty and ``argv`` still runs through the
    bootstrap (it also writes files and sets literal env values for the launchers that need it).
    """

    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    ray_runtime_env: dict[str, Any] = field(default_factory=dict)

    @property
    def python(self) -> str:
        """The interpreter that runs the bootstrap (and the native argv, when it is a Python command)."""
        return self.argv[0]


@dataclass(frozen=True)
class RunStatus:
    state: RunState
    exit_code: int | None = None
    message: str = ""

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


class Launcher(ABC):
    """Runs a NativeLaunch somewhere. ``PLUGIN_NAME`` is unique across plugins."""

    PLUGIN_NAME: ClassVar[str]
    DESCRIPTION: ClassVar[str] = ""
    #: ``--launcher-opt`` keys this launcher understands, with their meaning.
    OPTIONS: ClassVar[dict[str, str]] = {}
    #: ``status`` only reads local state (no engine to reach), so ``rladapt runs`` refreshes it unasked.
    LOCAL_STATUS: ClassVar[bool] = False

    @classmethod
    def merge_options(cls, native: NativeLaunch, options: dict[str, Any]) -> dict[str, Any]:
        """``spec.launcher.<name>`` overridden by ``options``; an unknown key is a usage error with a hint."""
        merged = {**native.launcher_options.get(cls.PLUGIN_NAME, {}), **options}
        unknown = [key for key in merged if key not in cls.OPTIONS and key != RUN_ID_OPTION]
        if unknown:
            import difflib

            messages = []
            for key in unknown:
                hint = difflib.get_close_matches(key, list(cls.OPTIONS), n=1)
                messages.append(
                    f"unknown {cls.PLUGIN_NAME} launcher option {key!r}"
                    + (f" (did you mean {hint[0]!r}?)" if hint else "")
                )
            raise UsageError("; ".join(messages) + "; expected one of: " + ", ".join(cls.OPTIONS))
        return merged

    def command(self, native: NativeLaunch) -> Command:
        """What to run for ``native``: its argv behind the patch bootstrap, and the patches' env and Ray hook.

        Every launcher runs this instead of ``native.argv``: a launcher that ran ``native.argv`` itself would start
        the framework without its runtime patches, and nothing would say so.
        """
        if not native.runtime_patches:
            return Command(argv=tuple(bootstrap_argv(native)))
        return Command(
            argv=tuple(bootstrap_argv(native)),
            env={PATCHES_ENV: ",".join(native.runtime_patches)},
            ray_runtime_env={"worker_process_setup_hook": WORKER_SETUP_HOOK},
        )

    @abstractmethod
    def render(self, native: NativeLaunch, options: dict[str, Any]) -> Artifacts:
        """Pure: the artifacts that ``submit`` would send, for the dry run and for review."""

    @abstractmethod
    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        """Submit; returns the handle (JSON-able) recorded in the run directory."""

    @abstractmethod
    def status(self, handle: dict[str, Any], run_dir: Path) -> RunStatus: ...

    @abstractmethod
    def logs(self, handle: dict[str, Any], run_dir: Path, follow: bool = False) -> Iterator[str]: ...

    @abstractmethod
    def stop(self, handle: dict[str, Any], run_dir: Path) -> RunStatus: ...
