"""The patch bootstrap: ``python -m rladapt.bootstrap [--patch module:function ...] -- <native argv>``.

It calls each runtime patch hook, then runs the native command. A monkeypatch lives in one Python process, so
a Python entrypoint of this same interpreter (``python -m pkg``, ``python script.py``, ``python -c code``)
runs in-process through ``runpy`` after the patches; anything else is ``exec``-ed (its exit code and
signals are its own; a child, signals forwarded, when the bootstrap must see its exit) and the patches reach it
only through ``worker_process_setup_hook`` in Ray workers.

With ``$RLADAPT_CHECKPOINTS`` set (``rladapt.resume``), it first decides what the job resumes from: the newest
complete checkpoint of the framework's own layout, partial steps moved aside, the framework's own resume
arguments added to the command. With ``max_restarts`` in it, it runs each attempt as a child and starts a failed
one again, deciding again each time, up to that many times (a stop, SIGTERM or SIGINT, is never restarted).
Where the job script restarts the driver itself (Slurm), the script tells each start which restart it is and how
the start before it ended (``RESTART_ENV``, ``PREVIOUS_EXIT_ENV``), so the same rule marks a step that failed to
load. Without a restart loop of its own, a start that resumed from a step judges its training's exit itself and
marks the step there (``_judge_own_exit``): a restart the launcher makes (a Kubernetes pod retry) or a later
``rladapt resume`` finds the mark, though nothing tells it how the start before it ended.

``worker_setup`` is the Ray ``runtime_env.worker_process_setup_hook`` (``WORKER_SETUP_HOOK``): it applies the
hooks listed in ``$RLADAPT_RUNTIME_PATCHES`` (comma-separated ``module:function``) in each worker process. Both
read the secrets of ``$RLADAPT_SECRET_FILES`` from files where they run, so a Ray job table holds only paths.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import runpy
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

# The names a launcher starts a job with are the contract's (rladapt.plugins.job); re-exported from here.
from rladapt.plugins.job import (
    FILES_ENV,
    LITERAL_ENV,
    PATCHES_ENV,
    PREVIOUS_EXIT_ENV,
    PUBLISH_ENV,
    RESTART_ENV,
    RUN_ATTEMPT_ENV,
    RUN_ID_ENV,
    SECRET_FILES_ENV,
    SETTINGS_ENV,
    TAKE_OVER_ENV,
    WORKER_SETUP_HOOK,
    bootstrap_argv,
    is_python,
    json_env_value,
)

if TYPE_CHECKING:
    from rladapt.plugins.adapter import FrameworkAdapter
    from rladapt.plugins.checkpoints import Checkpoint
    from rladapt.plugins.job import ResumeSettings

__all__ = [
    "FILES_ENV",
    "LITERAL_ENV",
    "PATCHES_ENV",
    "SECRET_FILES_ENV",
    "WORKER_SETUP_HOOK",
    "bootstrap_argv",
    "is_python",
    "json_env_value",
    "main",
    "worker_setup",
]

_HOOK = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*\Z")

_applied: list[str] = []


class PatchFailed(Exception):
    """A runtime patch hook could not be imported or raised: the framework must not run unpatched."""


def apply_literal_env() -> None:
    """Set the variables of ``$RLADAPT_LITERAL_ENV`` in this process (and so in its children)."""
    text = os.environ.get(LITERAL_ENV)
    if text:
        values = json.loads(text)
        os.environ.update({str(k): str(v) for k, v in values.items()})


class SecretFileError(Exception):
    """A secret's file cannot be read where the job runs: the job must not run without it."""


def apply_secret_files() -> list[str]:
    """Set each variable of ``$RLADAPT_SECRET_FILES`` to the text of its file; returns the names set.

    A relative path is taken from the current directory (a Ray job's working directory), ``~`` from ``$HOME``.
    Trailing newlines are dropped, as the local and slurm scripts' ``$(cat FILE)`` does. The error names the
    variable and the path, never a byte of the file.
    """
    text = os.environ.get(SECRET_FILES_ENV)
    if not text:
        return []
    try:
        files = json.loads(text)
    except ValueError as exc:
        raise SecretFileError(f"malformed ${SECRET_FILES_ENV}: {exc}") from None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise SecretFileError(f"malformed ${SECRET_FILES_ENV}: expected a JSON object of name -> path")
    for name, path in files.items():
        # Only `~` and `~/...`, as the scripts' quote_path: `~user` is a name like any other.
        where = Path(path).expanduser() if path == "~" or path.startswith("~/") else Path(path)
        try:
            data = where.read_bytes()
        except OSError as exc:
            raise SecretFileError(
                f"cannot read the secret {name} from {json.dumps(path)}: {exc.strerror or exc}"
            ) from None
        if b"\0" in data:
            raise SecretFileError(
                f"the secret {name} in {json.dumps(path)} holds a NUL byte, which no variable can"
            )
        # fsdecode: the bytes reach the variable unchanged, whatever their encoding.
        os.environ[str(name)] = os.fsdecode(data.rstrip(b"\n"))
    return list(files)


def parse_patch_list(text: str | None) -> list[str]:
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def apply_patches(hooks: Iterable[str]) -> list[str]:
    """Call each ``module:function`` once per process, in order; returns the hooks called now."""
    called = []
    for hook in hooks:
        if hook in _applied:
            continue
        if not _HOOK.match(hook):
            raise PatchFailed(f"runtime patch {hook!r} is not of the form module:function")
        module_name, _, func_name = hook.partition(":")
        try:
            func = getattr(importlib.import_module(module_name), func_name)
            func()
        except Exception as exc:
            raise PatchFailed(f"runtime patch {hook} failed: {type(exc).__name__}: {exc}") from exc
        _applied.append(hook)
        called.append(hook)
    return called


def write_files(files: dict[str, str], base: Path) -> list[Path]:
    """Write ``files`` under ``base``; a path that is absolute or climbs out of ``base`` is refused."""
    written = []
    for name, text in files.items():
        rel = Path(name)
        if not name or rel.is_absolute() or ".." in rel.parts:
            raise ValueError(f"file {name!r} is not a relative path inside the working directory")
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def worker_setup() -> None:
    """Ray ``worker_process_setup_hook``: the literal env, the secret files, then ``$RLADAPT_RUNTIME_PATCHES``.

    Ray 2.60.0 runs it in each worker process before the worker takes any task, and stops a worker whose hook
    raises, with the error (``ray/_private/workers/default_worker.py``, ``load_and_execute_setup_hook`` in
    ``ray/_private/runtime_env/setup_hook.py``): a worker never runs without its secrets.
    """
    apply_literal_env()
    apply_secret_files()
    apply_patches(parse_patch_list(os.environ.get(PATCHES_ENV)))


def _same_interpreter(program: str) -> bool:
    found = shutil.which(program)
    if found is None:
        return False
    # Only the same directory counts: a venv's python is a symlink to the base one, which has other packages.
    return Path(found).absolute().parent == Path(sys.executable).absolute().parent


def _run_in_process(argv: Sequence[str]) -> bool:
    """Run a Python argv of this interpreter here; False when its form is not one we can reproduce exactly."""
    if len(argv) < 2 or not _same_interpreter(argv[0]):
        return False
    first, rest = argv[1], list(argv[2:])
    if first == "-m" and rest:
        sys.argv = [rest[0], *rest[1:]]
        runpy.run_module(rest[0], run_name="__main__", alter_sys=True)
        return True
    if first == "-c" and rest:
        sys.argv = ["-c", *rest[1:]]
        exec(compile(rest[0], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        return True
    if not first.startswith("-"):
        sys.argv = [first, *rest]
        sys.path[0] = str(Path(first).resolve().parent)
        runpy.run_path(first, run_name="__main__")
        return True
    return False


def _usage(message: str) -> NoReturn:
    print(f"rladapt.bootstrap: {message}", file=sys.stderr)
    print(
        "usage: python -m rladapt.bootstrap [--patch module:function ...] -- PROGRAM [ARGS...]",
        file=sys.stderr,
    )
    raise SystemExit(2)


def parse_args(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """``--patch H`` / ``--patch=H`` options, then ``--``, then the native argv (kept verbatim)."""
    patches: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            native = list(args[i + 1 :])
            if not native:
                _usage("no command after --")
            return patches, native
        if arg == "--patch" and i + 1 < len(args):
            patches.append(args[i + 1])
            i += 2
        elif arg.startswith("--patch="):
            patches.append(arg.partition("=")[2])
            i += 1
        else:
            _usage(f"unexpected argument {arg!r}")
    _usage("missing -- before the command")


def _say(message: str) -> None:
    print(f"rladapt.bootstrap: {message}", file=sys.stderr, flush=True)


def _hold_checkpoint_dir(directory: str) -> tuple[bool, Callable[[], None]]:
    """Hold the checkpoint directory for this job's run (``rladapt.runs.owner``) and keep its heartbeat going;
    True when this start is a restart of the attempt that held it last (a Slurm requeue, a pod retry), and what
    lets the directory go again when this start is refused.

    Without ``$RLADAPT_RUN_ID`` (a job started by hand, or by an older rladapt) nothing is held. Another run
    holding the directory is exit 2, as the runner's own check before submitting would have said.
    """
    from rladapt.runs.owner import DirectoryHeld, release, start_heartbeat, take

    run_id = os.environ.get(RUN_ID_ENV)
    if not run_id:
        return False, lambda: None
    attempt = os.environ.get(RUN_ATTEMPT_ENV) or run_id
    root = Path.cwd() / directory
    try:
        mine, before = take(root, run_id, attempt, take_over=os.environ.get(TAKE_OVER_ENV) == "1")
        start_heartbeat(root, mine)
    except DirectoryHeld as exc:
        print(f"rladapt.bootstrap: error: {exc.message}", file=sys.stderr)
        raise SystemExit(2) from None
    except OSError as exc:
        print(
            f"rladapt.bootstrap: cannot hold the checkpoint directory {str(root)!r}: {exc}", file=sys.stderr
        )
        raise SystemExit(1) from None
    if before is not None and before.run != run_id:
        _say(f"took the checkpoint directory {root} over from {before.describe()}")
    requeued = before is not None and before.run == run_id and before.attempt == attempt
    if requeued:
        _say(f"a restart of {attempt}: continuing from the newest complete step of its own checkpoints")
    return requeued, lambda: release(root, mine)


def _mark_if_unloaded(
    adapter: FrameworkAdapter,
    settings: ResumeSettings,
    chosen: Checkpoint,
    code: int,
    restart: int,
    *,
    root: Path | None = None,
    which: str | None = None,
) -> None:
    """Mark ``chosen`` bad (``rladapt.plugins.checkpoints.mark_bad``) when the attempt that resumed from it failed
    to load it, as far as the job can tell: it exited with an error of its own (1-127: a Python exception such as
    torch's "PytorchStreamReader failed reading zip archive" or a ``load_state_dict`` mismatch; a signal, 128+, is
    a kill, an OOM or a preemption, and says nothing about the step) and committed no step after it. Without the
    mark every restart would take the same step again and fail the same way; with it the next start moves the
    step aside (never deleted) and continues from the newest complete step before it.
    """
    from rladapt.plugins.checkpoints import bad_reason, mark_bad

    if not 0 < code < 128:
        return
    root = Path.cwd() / settings.dir if root is None else root
    if bad_reason(root, chosen) is not None:
        return  # the start that failed marked it already (``_judge_own_exit``)
    scan = adapter.scan_checkpoints(root, settings.version)
    if scan is None:
        return
    newer = [c.step for c in scan.judged(settings.world_size).complete if c.step > chosen.step]
    if newer:
        return  # it went on past the step: whatever failed, the step loaded
    which = which or ("the first start" if restart == 0 else f"restart {restart}")
    reason = f"{which} resumed from it and exited with {code} before committing a later step"
    try:
        mark_bad(root, chosen, reason, os.environ.get(RUN_ATTEMPT_ENV))
    except OSError as exc:
        _say(f"cannot mark step {chosen.step} as failing to load in {root}: {exc}")
        return
    _say(f"step {chosen.step} ({chosen.path}) is marked bad, never chosen again: {reason}")


def _restart_of_the_job() -> tuple[int, int | None]:
    """Which restart of the job script's own loop this start is, and the exit code of the start before it
    (``RESTART_ENV``, ``PREVIOUS_EXIT_ENV``: Slurm's restart loop sets them); (0, None) for a first start.

    Both are taken out of the environment: they describe this start only, not the framework's processes.
    """
    restart_text = os.environ.pop(RESTART_ENV, "")
    exit_text = os.environ.pop(PREVIOUS_EXIT_ENV, "")
    try:
        restart = int(restart_text) if restart_text else 0
        code = int(exit_text) if exit_text else None
    except ValueError:
        _say(
            f"ignoring ${RESTART_ENV}={restart_text!r} ${PREVIOUS_EXIT_ENV}={exit_text!r}: expected integers"
        )
        return 0, None
    return max(restart, 0), code


def _mark_previous_start(
    adapter: FrameworkAdapter, settings: ResumeSettings, restart: int, code: int
) -> None:
    """On restart ``restart`` of the job script's loop, apply ``_mark_if_unloaded`` to the step the start before
    it resumed from: the last start of ``$RLADAPT_ATTEMPTS``, when that is the previous start (restart - 1).

    A previous start that failed before it recorded itself (a patch that did not import, a secret file missing)
    loaded no step; the last entry is then an older start's, and blaming its step would be wrong: nothing is marked.
    """
    from rladapt.resume import last_attempt

    entry = last_attempt()
    if entry is None or entry.get("restart") != restart - 1 or not isinstance(entry.get("from_step"), int):
        return
    root = Path.cwd() / settings.dir
    scan = adapter.scan_checkpoints(root, settings.version)
    recorded = Path(str(entry.get("path")))
    chosen = next(
        (
            c
            for c in (scan.checkpoints if scan else ())
            if c.step == entry["from_step"] and c.path == recorded
        ),
        None,
    )
    if chosen is None:
        return  # moved aside or deleted since: no start can choose it again
    _mark_if_unloaded(adapter, settings, chosen, code, restart - 1)


#: What judges the exit of the training this start runs without a restart loop of its own (``_judge_own_exit``).
_after_exit: list[Callable[[int], None]] = []


def _judge_own_exit(
    adapter: FrameworkAdapter, settings: ResumeSettings, chosen: Checkpoint | None, which: str
) -> None:
    """Have this start mark ``chosen`` bad when its training fails to load it (``_mark_if_unloaded``), once the
    training has exited (``_exited``).

    Here the launcher restarts the job, not this bootstrap (a Kubernetes pod retry under the Job's or RayJob's
    backoffLimit, Slurm's restart loop and requeue), or nothing does (a run without restarts, which `rladapt
    resume` starts again): the next start is a new process, often on another host, that cannot see how this one
    ended. The start that failed can: it knows its step and its training's exit code, and writes the mark into the
    checkpoint directory, which every later start and `rladapt resume` reads. The root is taken now: an in-process
    framework may change the working directory.
    """
    if chosen is None:
        return
    root = Path.cwd() / settings.dir
    pid = os.getpid()

    def judge(code: int) -> None:
        if os.getpid() == pid:  # not in a forked child of the training unwinding through here
            _mark_if_unloaded(adapter, settings, chosen, code, 0, root=root, which=which)

    _after_exit[:] = [judge]


def _exited(code: int) -> int:
    """Judge the training's exit ``code`` (``_judge_own_exit``), once; returns ``code``. Never raises: the job's
    exit code is the training's whatever the judging meets."""
    from rladapt.primitives.errors import RladaptError

    judges, _after_exit[:] = list(_after_exit), []
    for judge in judges:
        try:
            judge(code)
        except (RladaptError, OSError) as exc:
            _say(f"cannot judge the step this start resumed from: {exc}")
    return code


def _run_in_process_judged(native: Sequence[str]) -> bool:
    """``_run_in_process``, its exit judged (``_exited``): an exception is exit 1 as Python reports it, a
    ``SystemExit`` its code, an interrupt a stop (130) that says nothing about the step."""
    if not _after_exit:
        return _run_in_process(native)
    try:
        ran = _run_in_process(native)
    except SystemExit as exc:
        _exited(exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1))
        raise
    except KeyboardInterrupt:
        _exited(130)
        raise
    except BaseException:
        _exited(1)
        raise
    if ran:
        _exited(0)
    return ran


def _resume_and_restart(settings_text: str, native: list[str], hooks: list[str]) -> list[str]:
    """Decide the resume point; without restarts return the command to run here, else supervise the attempts.

    Each attempt is a child bootstrap (the runtime patches apply in it, in process), decided afresh from the
    checkpoints on disk: a restart resumes from whatever the failed attempt committed last.
    """
    from rladapt.plugins import get_registry
    from rladapt.primitives.errors import RladaptError
    from rladapt.resume import (
        ResumeRefused,
        Settings,
        carry_out,
        decide,
        describe,
        record_attempt,
        restarted,
    )

    try:
        settings = Settings.from_json(json.loads(settings_text))
    except (ValueError, TypeError) as exc:
        print(f"rladapt.bootstrap: malformed ${SETTINGS_ENV}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    try:
        adapter = get_registry().framework(settings.framework)
    except RladaptError as exc:
        print(f"rladapt.bootstrap: {exc.message}", file=sys.stderr)
        raise SystemExit(2) from None
    requeued, let_go = _hold_checkpoint_dir(settings.dir)
    job_restart, previous_exit = _restart_of_the_job()
    if previous_exit is not None and job_restart > 0:
        try:
            _mark_previous_start(adapter, settings, job_restart, previous_exit)
        except (RladaptError, OSError) as exc:
            # the decision below scans again and says what is wrong with the directory, with its exit code
            _say(f"cannot judge the step the previous start resumed from: {exc}")
    stopping: list[int] = []
    child: list[subprocess.Popen[bytes]] = []

    def on_stop(signum: int, frame: object) -> None:
        stopping.append(signum)
        if child and child[0].poll() is None:
            child[0].send_signal(signum)

    restart = 0
    while True:
        try:
            first = restart == 0 and job_restart == 0 and not requeued
            decision = decide(adapter, settings if first else restarted(settings), native)
            if decision is not None:
                carry_out(decision, _say)
                _say(describe(decision))
        except ResumeRefused as exc:
            print(f"rladapt.bootstrap: error: {exc.message}", file=sys.stderr)
            # Refusing the first start is about the spec (exit 2); a restart exists because the job failed, so
            # not getting it going again is that failure, not a usage error.
            if first:
                # a refused start wrote nothing: a requeue must not take the directory for a restart of its own
                let_go()
            raise SystemExit(2 if first else 1) from None
        except (RladaptError, OSError) as exc:
            message = exc.message if isinstance(exc, RladaptError) else str(exc)
            print(f"rladapt.bootstrap: cannot decide what to resume from: {message}", file=sys.stderr)
            raise SystemExit(1) from None
        argv = list(decision.plan.argv) if decision is not None else list(native)
        record_attempt(decision, job_restart + restart, settings.max_restarts)
        if settings.max_restarts <= 0:
            which = f"restart {job_restart}" if job_restart else "a retry" if requeued else "the first start"
            _judge_own_exit(adapter, settings, decision.chosen if decision else None, which)
            return argv
        if not child:
            signal.signal(signal.SIGTERM, on_stop)
            signal.signal(signal.SIGINT, on_stop)
        sys.stdout.flush()
        sys.stderr.flush()
        patches = [a for hook in hooks for a in ("--patch", hook)]
        proc = subprocess.Popen([sys.executable, "-m", "rladapt.bootstrap", *patches, "--", *argv])
        child[:] = [proc]
        code = proc.wait()
        code = 128 - code if code < 0 else code
        if code == 0 or stopping:
            raise SystemExit(code)
        if decision is not None and decision.chosen is not None:
            _mark_if_unloaded(adapter, settings, decision.chosen, code, restart)
        if restart >= settings.max_restarts:
            _say(
                f"the attempt exited with {code}; no restart left (lifecycle.max_restarts is {settings.max_restarts})"
            )
            raise SystemExit(code)
        restart += 1
        _say(f"the attempt exited with {code}; restart {restart} of {settings.max_restarts}")


def main(args: Sequence[str] | None = None) -> None:
    patches, native = parse_args(sys.argv[1:] if args is None else args)
    try:
        apply_literal_env()
    except (ValueError, AttributeError) as exc:
        print(f"rladapt.bootstrap: malformed ${LITERAL_ENV}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    try:
        apply_secret_files()
    except SecretFileError as exc:
        print(f"rladapt.bootstrap: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    files_json = os.environ.pop(FILES_ENV, None)
    if files_json:
        try:
            files = json.loads(files_json)
            if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
                raise ValueError("expected a JSON object of path -> text")
            write_files(files, Path.cwd())
        except (ValueError, OSError) as exc:
            print(f"rladapt.bootstrap: cannot write the files from ${FILES_ENV}: {exc}", file=sys.stderr)
            raise SystemExit(1) from None
    hooks = list(dict.fromkeys([*parse_patch_list(os.environ.get(PATCHES_ENV)), *patches]))
    try:
        apply_patches(hooks)
    except PatchFailed as exc:
        print(f"rladapt.bootstrap: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    if hooks:
        # Python children (and Ray workers through worker_setup) see the same list.
        os.environ[PATCHES_ENV] = ",".join(hooks)
    settings_text = os.environ.pop(SETTINGS_ENV, None)
    publishing = _start_publisher(os.environ.pop(PUBLISH_ENV, None))
    try:
        if settings_text:
            native = _resume_and_restart(settings_text, native, hooks)
        if is_python(native[0]) and _run_in_process_judged(native):
            return
        if publishing is not None or _after_exit:
            # not exec: the last checkpoint is published, and the step it resumed from judged, after the training
            # exits, before the job ends
            raise SystemExit(_exited(_run_child(native)))
    finally:
        if publishing is not None:
            publishing()
    _exec(native, hooks)


def _start_publisher(text: str | None) -> Callable[[], None] | None:
    """Start the pool publisher beside the training (``spec.pool``); returns what ends it with a last pass."""
    if not text:
        return None
    from rladapt.pool.publisher import PublishSettings, publish_new

    try:
        data = json.loads(text)
        data.setdefault("run_id", os.environ.get(RUN_ID_ENV))
        settings = PublishSettings.from_json(data)
    except (ValueError, TypeError) as exc:
        print(f"rladapt.bootstrap: malformed ${PUBLISH_ENV}: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    sidecar = subprocess.Popen(
        [sys.executable, "-m", "rladapt.pool.publisher", "--settings", json.dumps(settings.to_json()),
         "--parent", str(os.getpid())],
        stdin=subprocess.DEVNULL,
    )  # fmt: skip

    def finish() -> None:
        sidecar.terminate()  # a copy it was making is swept by `pool gc`; the pass below publishes that step
        try:
            sidecar.wait(30)
        except subprocess.TimeoutExpired:
            sidecar.kill()
            sidecar.wait()
        publish_new(settings)

    return finish


def _run_child(argv: Sequence[str]) -> int:
    """``argv`` as a child, signals forwarded; its exit code (128 + N for a signal, as a shell says)."""
    proc = subprocess.Popen(list(argv))

    def forward(signum: int, frame: object) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    code = proc.wait()
    return 128 - code if code < 0 else code


def _exec(native: Sequence[str], hooks: Sequence[str]) -> None:
    if hooks:
        print(
            f"rladapt.bootstrap: warning: {native[0]} is not run in this Python process; runtime patches "
            f"{', '.join(hooks)} reach it only through Ray's worker_process_setup_hook",
            file=sys.stderr,
        )
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(native[0], list(native))
    except OSError as exc:
        print(f"rladapt.bootstrap: cannot run {native[0]!r}: {exc.strerror or exc}", file=sys.stderr)
        raise SystemExit(127) from None


if __name__ == "__main__":
    # Run through the importable module so the applied-patch record is shared with ``worker_setup``.
    from rladapt.bootstrap import main as _main

    _main()
