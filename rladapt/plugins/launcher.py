"""The launcher contract: what ``rladapt_register_launchers`` returns.

Split as in TorchX's schedulers: ``render`` is pure and returns exactly what would be submitted (the dry run shows
it byte for byte); ``submit``, ``status``, ``logs`` and ``stop`` have the side effects.

``render(native, command, options, *, run_id)`` is handed everything it needs: the runner builds the ``Command``
once per run (``Launcher.command``: what to run, with the runtime patches already in it; a launcher runs
``Command.argv`` with ``Command.env`` added, and adds ``Command.ray_runtime_env`` to the Ray job's runtime_env
where it has one) and passes the run id (None for a dry run) apart from the options. A launcher written against
the earlier contract, ``render(native, options)`` with the run id inside ``options``, still works through
``render_artifacts`` for one minor version, with a ``DeprecationWarning``.
"""

from __future__ import annotations

import difflib
import inspect
import math
import numbers
import os
import re
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from rladapt.primitives.errors import PluginError, UsageError

from .job import (
    PATCHES_ENV,
    PUBLISH_ENV,
    SETTINGS_ENV,
    WORKER_SETUP_HOOK,
    bootstrap_argv,
    json_env_value,
    publish_settings,
    resume_settings,
)

if TYPE_CHECKING:
    from .native import NativeLaunch

#: Where a launcher written before ``render`` took ``run_id`` finds the run id: in its options (deprecated; see
#: ``render_artifacts``). A dry run has none.
RUN_ID_OPTION = "run_id"
#: The release in which ``render(native, options)`` stops being called (deprecated in 0.2.0).
LEGACY_RENDER_REMOVED_IN = "0.3.0"

#: Created (empty, exclusively) in a run's directory by ``rladapt stop`` while the run is still being submitted.
#: Whoever is about to start the job checks it last, after saying how the job can be found: the runner before
#: and after ``submit``, a launcher before it forks or right before its job starts. So a run stopped during its
#: submission never starts afterwards, whichever process sees the request first.
STOP_REQUEST_FILE = "stop-requested"


def stop_requested(run_dir: Path) -> bool:
    """True when ``rladapt stop`` asked, during the submission, that this run never start."""
    return (run_dir / STOP_REQUEST_FILE).exists()


#: The values an option of ``-o KEY=VALUE`` (a string) or of ``spec.launcher.<name>`` (YAML) turns into: str,
#: int, float, bool, or a plugin's own type, whose constructor parses the value (``Option._convert``).
OptionType = type[Any]
_TYPE_NAMES: dict[type, str] = {str: "str", int: "int", float: "float", bool: "bool"}
_TRUE, _FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})

RunState = Literal["PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "UNKNOWN"]
TERMINAL_STATES: frozenset[str] = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})


@dataclass(frozen=True)
class Artifacts:
    """What a launcher submits: files it writes (script, manifests) and the request it makes."""

    launcher: str
    files: dict[str, str] = field(default_factory=dict)
    request: dict[str, Any] = field(default_factory=dict)
    #: What the launcher renders but whoever submits should know first (e.g. checkpoints on a pod's ephemeral
    #: disk): ``rladapt launch`` prints each on stderr, and ``--strict`` refuses the launch (exit 2) over them.
    #:
    #: .. versionadded:: 0.4
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """The dry-run text: every file, verbatim, then the request as JSON."""
        import json

        parts = []
        for name, text in self.files.items():
            parts.append(f"--- {name} ---\n{text}" + ("" if text.endswith("\n") else "\n"))
        if self.request:
            try:  # NaN/Infinity are not JSON: a request holding one is the launcher's bug, named as such
                request = json.dumps(self.request, indent=2, sort_keys=True, allow_nan=False)
            except ValueError as exc:
                raise PluginError(
                    f"the {self.launcher} launcher rendered a request JSON cannot hold: {exc}"
                ) from None
            parts.append(f"--- request ---\n{request}\n")
        return "".join(parts)


@dataclass(frozen=True)
class Option:
    """One launcher option, declared once in ``Launcher.OPTIONS`` (TorchX's ``runopt``).

    ``Launcher.merge_options`` converts a value to ``type`` (a string from ``-o KEY=VALUE`` or a YAML value from
    ``spec.launcher.<name>``), then checks ``choices``, ``pattern`` (a full match), ``minimum``/``maximum`` and
    ``validator``. ``validator`` gets the converted value and returns None when it is good, else what was
    expected (e.g. ``"an absolute path"``). ``expected`` replaces the generated description of a good value in
    every message about this option. ``default`` (None: unset, the launcher decides) fills an option nobody set;
    ``required`` makes setting it mandatory.

    ``path`` marks a file or directory of this machine (a ``str`` option): the value is made absolute against
    the current directory, ``~`` expanded, when it is parsed. The run record keeps the merged options, so
    ``status`` and ``stop`` run from another directory reach the same file as the launch did.

    A number that is not finite (``nan``, ``inf``, YAML's ``.nan``/``.inf``) is never a good value, whatever the
    type: no option means "forever" by infinity, and ``json`` would print it as ``NaN``, which is not JSON.
    """

    name: str
    type: OptionType = str
    help: str = ""
    default: Any = None
    choices: tuple[Any, ...] = ()
    pattern: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    validator: Callable[[Any], str | None] | None = None
    expected: str | None = None
    required: bool = False
    path: bool = False

    @property
    def type_name(self) -> str:
        return _TYPE_NAMES.get(self.type, getattr(self.type, "__name__", str(self.type)))

    def describe(self) -> str:
        """What a good value is, for messages: ``an integer from 1 to 65535``, ``one of A, B``, ..."""
        if self.expected is not None:
            return self.expected
        if self.choices:
            return "one of " + ", ".join(str(c) for c in self.choices)
        if self.path:
            return "a path (relative ones are taken from the current directory)"
        base = {str: "a string", int: "an integer", float: "a finite number", bool: "true or false"}.get(
            self.type, f"a {self.type_name}"
        )
        if self.pattern is not None:
            return f"{base} matching {self.pattern}"
        if self.minimum is not None and self.maximum is not None:
            return f"{base} from {self.minimum:g} to {self.maximum:g}"
        if self.minimum is not None:
            return f"{base} >= {self.minimum:g}"
        if self.maximum is not None:
            return f"{base} <= {self.maximum:g}"
        return base

    def parse(self, value: Any, launcher: str) -> Any:
        """``value`` converted and checked; a UsageError names the option, what it expects and what it found."""
        converted = None if _non_finite(value) else self._convert(value)
        if converted is not None and self.path:
            converted = _absolute_path(converted)
        if converted is None or _non_finite(converted) or not self._valid(converted):
            raise UsageError(f"{launcher} launcher option {self.name}={value!r}: expected {self.describe()}")
        if self.validator is not None:
            problem = self.validator(converted)
            if problem is not None:
                raise UsageError(f"{launcher} launcher option {self.name}={value!r}: expected {problem}")
        return converted

    def _convert(self, value: Any) -> Any:
        # bool is an int to Python, never to a user: true is not a number, 1 is a bool only when asked for.
        if self.type is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower() if isinstance(value, (str, int)) else ""
            return True if text in _TRUE else False if text in _FALSE else None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return None
        if self.type is str:
            return str(value).strip()
        if self.type is int:
            if isinstance(value, float):
                return int(value) if value.is_integer() else None
            try:
                return int(str(value).strip())
            except ValueError:
                return None
        if self.type is float:
            try:
                return float(value)
            except ValueError:
                return None
        try:  # a plugin's own type: its constructor parses the text
            return self.type(value)
        except Exception:  # whatever it raises (Decimal: InvalidOperation) means the text is not a good value
            return None

    def _valid(self, value: Any) -> bool:
        if self.choices and value not in self.choices:
            return False
        if self.pattern is not None and not re.fullmatch(self.pattern, str(value)):
            return False
        if self.minimum is not None and value < self.minimum:
            return False
        return self.maximum is None or value <= self.maximum


def _non_finite(value: Any) -> bool:
    """True for nan and the infinities, as Python floats or as a plugin type's own numbers (``Decimal``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        return False
    try:
        return not math.isfinite(value)  # type: ignore[arg-type]
    except TypeError:  # a complex number: no option takes one, and its own check refuses it
        return False
    except ValueError:  # Decimal("sNaN"): a NaN that will not even become a float
        return True


def _absolute_path(value: Any) -> str | None:
    """``value`` made absolute against the current directory, ``~`` expanded; None for what is no path."""
    text = str(value)
    if not text or "\0" in text:
        return None
    # abspath, not resolve: a symlink the user named stays the path recorded (it may point elsewhere later, as
    # the user intends), and a file that does not exist yet is still a path.
    return os.path.abspath(os.path.expanduser(text))


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


@dataclass(frozen=True)
class ServiceStatus:
    """The state of one service role of a run (``NativeLaunch.services``), as its launcher sees it now.

    ``unit`` names what the launcher runs it as (``pid 123``, a Ray job id, a Slurm step, a Kubernetes Job), so that
    whoever reads ``rladapt status`` can find it with the engine's own tools; ``restarts`` counts the starts
    after the first.
    """

    name: str
    state: RunState
    restarts: int = 0
    unit: str = ""
    message: str = ""

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "restarts": self.restarts,
            "unit": self.unit,
            "message": self.message,
        }


class Launcher(ABC):
    """Runs a NativeLaunch somewhere. ``PLUGIN_NAME`` is unique across plugins."""

    PLUGIN_NAME: ClassVar[str]
    DESCRIPTION: ClassVar[str] = ""
    #: The options (``-o KEY=VALUE``, ``spec.launcher.<name>``) this launcher understands, parsed by
    #: ``merge_options``. (A launcher written before options were typed declared ``{name: help}``: still read, as
    #: string options.)
    OPTIONS: ClassVar[tuple[Option, ...]] = ()
    #: ``status`` only reads local state (no engine to reach), so ``rladapt runs`` refreshes it unasked.
    LOCAL_STATUS: ClassVar[bool] = False
    #: The launcher starts a failed job again by itself, ``lifecycle.max_restarts`` times (the Slurm script's
    #: loop, a Kubernetes ``backoffLimit``): the bootstrap then only decides each start's resume point. Without
    #: it, the bootstrap restarts failed attempts itself.
    RESTARTS_ITSELF: ClassVar[bool] = False

    @classmethod
    def declared_options(cls) -> dict[str, Option]:
        """``OPTIONS`` by name."""
        options: Any = cls.OPTIONS
        if isinstance(options, Mapping):
            return {name: Option(name, help=str(text)) for name, text in options.items()}
        return {option.name: option for option in options}

    @classmethod
    def merge_options(cls, native: NativeLaunch, options: Mapping[str, Any]) -> dict[str, Any]:
        """``spec.launcher.<name>`` overridden by ``options`` (``-o KEY=VALUE`` strings), converted and checked.

        Returns a value of its declared type for every option that is set or has a default (``run_id``, which
        only ``render_artifacts`` puts there for a launcher of the earlier contract, is passed through as is); an
        unknown key, a value of the wrong type or out of its range, and a required
        option left unset are UsageErrors naming the option.
        """
        declared = cls.declared_options()
        raw = {**native.launcher_options.get(cls.PLUGIN_NAME, {}), **options}
        unknown = [key for key in raw if key not in declared and key != RUN_ID_OPTION]
        if unknown:
            messages = []
            for key in unknown:
                hint = difflib.get_close_matches(key, list(declared), n=1)
                messages.append(
                    f"unknown {cls.PLUGIN_NAME} launcher option {key!r}"
                    + (f" (did you mean {hint[0]!r}?)" if hint else "")
                )
            raise UsageError("; ".join(messages) + "; expected one of: " + ", ".join(declared))
        merged: dict[str, Any] = {}
        for name, option in declared.items():
            value = raw.get(name)
            if value is not None:
                merged[name] = option.parse(value, cls.PLUGIN_NAME)
            elif option.required:
                raise UsageError(
                    f"{cls.PLUGIN_NAME} launcher option {name} is required ({option.describe()}): pass "
                    f"--launcher-opt {name}=VALUE or set spec.launcher.{cls.PLUGIN_NAME}.{name}"
                )
            elif option.default is not None:
                merged[name] = option.default
        if RUN_ID_OPTION in raw:
            merged[RUN_ID_OPTION] = raw[RUN_ID_OPTION]
        return merged

    def command(self, native: NativeLaunch) -> Command:
        """What to run for ``native``: its argv behind the patch bootstrap, and the patches' env and Ray hook.

        Every launcher runs this instead of ``native.argv``: a launcher that ran ``native.argv`` itself would start
        the framework without its runtime patches, and nothing would say so.
        """
        env: dict[str, str] = {}
        settings = resume_settings(native, restarts_in_job=not self.RESTARTS_ITSELF)
        if settings is not None:
            # The job decides what it resumes from, where it runs (rladapt.resume): the same rule on every launcher.
            env[SETTINGS_ENV] = json_env_value(settings.to_json())
        publishing = publish_settings(native)
        if publishing is not None:
            # ... and publishes its complete checkpoints to the model pool from where it runs, for the same reason
            env[PUBLISH_ENV] = json_env_value(publishing)
        if not native.runtime_patches:
            return Command(argv=tuple(bootstrap_argv(native)), env=env)
        return Command(
            argv=tuple(bootstrap_argv(native)),
            env={PATCHES_ENV: ",".join(native.runtime_patches), **env},
            ray_runtime_env={"worker_process_setup_hook": WORKER_SETUP_HOOK},
        )

    def intent(self, artifacts: Artifacts, run_id: str) -> dict[str, Any]:
        """What will identify the job once ``submit`` has run, known before it runs (JSON-able).

        The runner records this in ``run.json`` with the state ``SUBMITTING`` before it calls ``submit``, so a
        submission cut short (``kill -9`` right after ``sbatch`` accepted the job, a crash while the handle is
        saved) still leaves enough to find the job: the Slurm job name, the Ray submission id chosen up front,
        the RayJob's namespace and name, the file the local job writes its process group into. Pure: no I/O.
        The default, ``{"run_id": run_id}``, suits a launcher that names its jobs after the run id.
        """
        return {"run_id": run_id}

    def find(self, intent: dict[str, Any], run_dir: Path) -> dict[str, Any] | None:
        """Look the job of an interrupted submission up by its ``intent``.

        Returns the handle ``submit`` would have returned (``status``, ``logs`` and ``stop`` take it) when the
        job exists, and ``None`` when the launcher can tell that no job with that identity was ever submitted.
        Raises ``LaunchError`` when it cannot tell (the engine is unreachable). The default raises
        ``NotImplementedError``: the runner then reports the run as UNKNOWN with its intent, rather than
        claiming that nothing runs.
        """
        raise NotImplementedError(f"the {self.PLUGIN_NAME} launcher cannot look a job up by its identity")

    @abstractmethod
    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        """Pure: the artifacts that ``submit`` would send, for the dry run and for review.

        ``command`` is what to run (``self.command(native)``, built once by the runner), ``options`` the merged
        options (``merge_options``), ``run_id`` the id to name the job and its objects after (a DNS label), None
        for a dry run.
        """

    @abstractmethod
    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        """Submit; returns the handle (JSON-able) recorded in the run directory."""

    @abstractmethod
    def status(self, handle: dict[str, Any], run_dir: Path) -> RunStatus: ...

    @abstractmethod
    def logs(self, handle: dict[str, Any], run_dir: Path, follow: bool = False) -> Iterator[str]: ...

    @abstractmethod
    def stop(self, handle: dict[str, Any], run_dir: Path) -> RunStatus: ...

    def services(self, handle: dict[str, Any], run_dir: Path) -> tuple[ServiceStatus, ...]:
        """The state of each service role the run was launched with, in the launch's order.

        ``stop`` stops them with the job. A launcher that runs no service roles keeps this default: none.
        """
        return ()


def legacy_render(launcher: Launcher) -> bool:
    """True for a launcher whose ``render`` is the earlier contract's ``render(native, options)``: it takes
    neither a ``command`` nor a ``run_id``."""
    try:
        params = inspect.signature(launcher.render).parameters
    except (TypeError, ValueError):  # a callable inspect cannot read: assume the current contract
        return False
    return "run_id" not in params and "command" not in params and len(params) == 2


def render_artifacts(
    launcher: Launcher,
    native: NativeLaunch,
    options: Mapping[str, Any],
    *,
    run_id: str | None = None,
    command: Command | None = None,
) -> Artifacts:
    """``launcher.render`` with what it needs: ``command`` (built here when not given) and ``run_id``.

    A launcher of the earlier contract (``render(native, options)``, the run id as the ``run_id`` option) is
    called the old way with a ``DeprecationWarning`` naming it and the new signature; it keeps working until
    ``LEGACY_RENDER_REMOVED_IN``.
    """
    if legacy_render(launcher):
        warnings.warn(
            f"the {launcher.PLUGIN_NAME} launcher ({type(launcher).__module__}.{type(launcher).__qualname__}) "
            "implements render(native, options), which is deprecated and stops working in rladapt "
            f"{LEGACY_RENDER_REMOVED_IN}: implement render(self, native, command, options, *, run_id) instead "
            "(command: what to run, built by the runner; run_id: None for a dry run, no longer an option)",
            DeprecationWarning,
            stacklevel=2,
        )
        given = dict(options) if run_id is None else {**options, RUN_ID_OPTION: run_id}
        render: Callable[[NativeLaunch, dict[str, Any]], Artifacts] = launcher.render  # type: ignore[assignment]
        return render(native, given)
    # the options as given, not a copy: the conformance kit checks that render leaves them unchanged
    given_options = options if isinstance(options, dict) else dict(options)
    return launcher.render(
        native, command if command is not None else launcher.command(native), given_options, run_id=run_id
    )
