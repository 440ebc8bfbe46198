"""The ``ray`` launcher: a Ray job on an existing cluster, through Ray's Job Submission API.

``render`` returns the exact ``JobSubmissionClient.submit_job`` request: the entrypoint (the native argv behind
the patch bootstrap, shell-quoted: Ray runs it through a shell), the runtime_env (the adapter's, with the job
environment, the adapter's files for the bootstrap to write, and ``worker_process_setup_hook`` when runtime
patches apply), the submission id and metadata. Four more keys are not sent to Ray: ``address`` (from
``--launcher-opt address=...``; else ``$RAY_ADDRESS`` at submit time), ``request_timeout`` (how long each HTTP
request to the dashboard may wait), ``secret_env`` (job variable -> its sources, variables of the submitting shell
first), resolved only at submit so that no secret value is ever rendered, and ``notes``, which says how each secret
travels. A secret sent by value is stored in Ray's job table, readable by anyone who reaches the dashboard; a
``file`` source sends only the path (``$RLADAPT_SECRET_FILES``), read on each node by the bootstrap (driver) and
``worker_process_setup_hook`` (workers).

The submission id is the run id, chosen before the submission: ``intent`` records it with the address, and
``find`` asks the Job API for it when the submitter died before it saved the handle.

Ray itself is imported lazily: ``rladapt`` starts without it, and only this launcher needs ``ray[default]``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shlex
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rladapt.launchers._common import (
    check_run_id,
    check_services,
    complete_lines,
    no_readable_source,
    nothing_to_stop,
    refuse_claim_creation,
    refuse_missing_inputs,
    refuse_role_resources,
    size_bytes,
)
from rladapt.launchers.ends_with_job import role_command
from rladapt.launchers.ray_upload import check_inputs, off_shared_storage
from rladapt.plugins import (
    Artifacts,
    Launcher,
    NativeLaunch,
    RunStatus,
    SecretKind,
    ServiceRole,
    ServiceStatus,
    hookimpl,
)
from rladapt.plugins.job import (
    FILES_ENV,
    LITERAL_ENV,
    SECRET_FILES_ENV,
    WORKER_SETUP_HOOK,
    bootstrap_argv,
    json_env_value,
)
from rladapt.plugins.launcher import Command, Option
from rladapt.primitives.errors import LaunchError, Problem, SpecError, UsageError

if TYPE_CHECKING:
    from ray.job_submission import JobSubmissionClient

T = TypeVar("T")
ADDRESS_ENV = "RAY_ADDRESS"
#: Request keys that are instructions to this launcher, not arguments of ``submit_job``.
_LOCAL_KEYS = (
    "address",
    "request_timeout",
    "secret_env",
    "notes",
    "paths",
    "inputs",
    "shared",
    "working_dir",
    "services",
)
_NUMERIC_OPTIONS = ("entrypoint_num_cpus", "entrypoint_num_gpus", "entrypoint_memory")
_STATES = {"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED"}
#: Seconds each HTTP request to the dashboard may wait to connect, and then between bytes of the answer.
DEFAULT_REQUEST_TIMEOUT = 30.0
STOP_WAIT = 30.0


#: What the ray launcher reads a secret from: a variable of the submitting shell (when it submits) or a file (on
#: each node, by the bootstrap and the worker setup hook).
_SECRET_KINDS: tuple[SecretKind, ...] = ("env", "file")
_ON_NODE = (
    "read on each node by rladapt's bootstrap (driver) and worker setup hook (workers): the job table holds only "
    "the path"
)
_RELATIVE = (
    " (relative to the job's working directory on the node; a file inside spec.runtime.working_dir is uploaded "
    "to the cluster with it)"
)


def _where(path: str) -> str:
    """What the note adds for a relative ``path``: Ray ships the working directory, secret file and all."""
    return "" if path.startswith(("/", "~")) else _RELATIVE


def _secret_plan(native: NativeLaunch) -> tuple[dict[str, str], dict[str, list[dict[str, str]]], list[str]]:
    """How each secret reaches the job: (file secrets, secrets settled at submit, notes for the dry run).

    A secret whose first source Ray can read is a file is settled now: only its path goes into the runtime_env.
    One whose first such source is a variable is settled at submit: the first of its variables that is set in
    the submitting shell, by value, else the file that follows them (a file on the nodes cannot be looked at from
    here, so nothing after it is tried).
    """
    files: dict[str, str] = {}
    at_submit: dict[str, list[dict[str, str]]] = {}
    notes: list[str] = []
    for secret in native.secrets:
        sources = secret.readable(_SECRET_KINDS)
        if not sources:
            raise no_readable_source(secret, "the ray launcher", _SECRET_KINDS)
        if sources[0].kind == "file":
            files[secret.env] = sources[0].name
            notes.append(f"secret {secret.env} <- {sources[0].label}, {_ON_NODE}{_where(sources[0].name)}")
            continue
        chain: list[dict[str, str]] = []
        for source in sources:
            chain.append({source.kind: source.name})
            if source.kind == "file":
                break
        at_submit[secret.env] = chain
        variables = " or ".join(f"${next(iter(c.values()))}" for c in chain if "env" in c)
        last = sources[len(chain) - 1]
        fallback = f"; else {last.label}, {_ON_NODE}{_where(last.name)}" if last.kind == "file" else ""
        notes.append(
            f"secret {secret.env} <- {variables} of the submitting shell (the first set), BY VALUE in the job's "
            "runtime_env: Ray's job table stores it, and anyone who can reach the dashboard reads it "
            f"(`ray job list`){fallback}. A `file` source listed first sends only its path"
        )
    return files, at_submit, notes


def render_request(
    native: NativeLaunch, options: dict[str, Any], command: Command, run_id: str | None = None
) -> dict[str, Any]:
    """The submit request that runs ``command`` for ``native`` (named after ``run_id`` when given); pure."""
    opts = RayLauncher.merge_options(native, options)
    refuse_role_resources(
        native,
        RayLauncher.PLUGIN_NAME,
        "a Ray job runs on an existing cluster, where the framework creates the actors of each role and gives "
        "them their resources; the job submission API reserves CPUs and memory for the driver only "
        "(-o entrypoint_num_cpus, -o entrypoint_memory)",
    )
    refuse_claim_creation(
        native,
        RayLauncher.PLUGIN_NAME,
        "a Ray job runs on an existing cluster's nodes, whose storage the job uses as it finds it",
    )
    runtime_env = json.loads(json.dumps(native.runtime_env))  # a deep copy of the adapter's value
    shared = _shared_dirs(opts.get("shared"))
    written, _ = written_paths(native, runtime_env, shared)
    command, path_notes = _ship_inputs(native, runtime_env, command, shared, written)
    wanted = {**dict(runtime_env.get("env_vars") or {}), **native.env}
    # Ray expands $VAR in env_vars with no way to escape it; values are verbatim everywhere else in rladapt
    # (the local script quotes them), so a value holding '$' goes through the bootstrap instead.
    env_vars = {k: str(v) for k, v in wanted.items() if "$" not in str(v)}
    literal = {k: str(v) for k, v in wanted.items() if "$" in str(v)}
    if literal:
        env_vars[LITERAL_ENV] = json_env_value(literal)
    if native.files:
        env_vars[FILES_ENV] = json_env_value(dict(native.files))
    env_vars.update(command.env)
    secret_files, secret_env, secret_notes = _secret_plan(native)
    if secret_files:
        env_vars[SECRET_FILES_ENV] = json_env_value(secret_files)
    # Env values holding '$' and secret files are set in each worker by the hook that applies the runtime patches.
    additions = {
        **command.ray_runtime_env,
        **({"worker_process_setup_hook": WORKER_SETUP_HOOK} if literal or secret_files else {}),
    }
    for key, value in additions.items():
        existing = runtime_env.get(key)
        if existing not in (None, value):
            raise UsageError(
                f"the adapter's runtime_env sets {key}={existing!r}, but rladapt needs "
                f"{value!r} (runtime patches, or env values holding '$'): Ray takes a single hook"
            )
        runtime_env[key] = value
    if env_vars:
        runtime_env["env_vars"] = env_vars
    metadata = {
        **{f"label.{k}": str(v) for k, v in native.labels.items()},
        "rladapt.job": native.job_name,
        "rladapt.framework": native.framework,
        "rladapt.version": native.version,
    }
    request: dict[str, Any] = {"entrypoint": shlex.join(command.argv)}
    if runtime_env:
        request["runtime_env"] = runtime_env
    if check_run_id(run_id, RayLauncher.PLUGIN_NAME):
        request["submission_id"] = str(run_id)
        metadata["rladapt.run_id"] = str(run_id)
    request["metadata"] = metadata
    for key in _NUMERIC_OPTIONS:
        if key in opts:
            number = opts[key]
            request[key] = int(number) if number.is_integer() else number  # as written: 2, not 2.0
    if opts.get("address"):
        request["address"] = str(opts["address"])
    request["request_timeout"] = opts["request_timeout"]
    if secret_env:
        request["secret_env"] = secret_env
    if secret_notes:
        request["notes"] = secret_notes
    if path_notes:  # what rladapt did so that the job finds the files it reads
        request["paths"] = path_notes
    if native.inputs:  # checked at submit: the ones in the upload, and those on shared storage mounted here
        request["inputs"] = dict(native.inputs)
        request["working_dir"] = native.working_dir
    if shared:
        request["shared"] = shared
    return request


#: Written by a service's entrypoint before each restart; ``services`` counts them in its logs.
_RESTART_MARK = "rladapt: restarting service"


def service_id(run_id: str | None, role: str) -> str | None:
    """The submission id of a service role's Ray job: the run id and the role's name."""
    return f"{run_id}-{role}" if run_id else None


def render_service(
    native: NativeLaunch, options: dict[str, Any], role: ServiceRole, run_id: str | None
) -> dict[str, Any]:
    """The submit request of one service role: its own Ray job with the job's runtime_env and working_dir, the
    role's environment over the job's, and the role's CPUs, GPUs and memory as the entrypoint's resources.

    It runs through the bootstrap (which sets the job's literal and secret-file variables and writes its files),
    without the driver's runtime patches, resume settings or pool publisher: those are the training's. Ray
    restarts no job: ``restart: on-failure`` is a loop in the entrypoint, which starts the command again after a
    failure, waiting longer each time (at most 30 s)."""
    service_native = native.model_copy(
        update={
            "argv": role_command(native, role),
            "env": {**native.env, **role.env},
            "runtime_patches": (),
        }
    )
    command = Command(argv=tuple(bootstrap_argv(service_native)))
    request = render_request(service_native, options, command, service_id(run_id, role.name))
    if role.restart == "on-failure":
        # the command as render_request made it, not as it came: a relative interpreter left out of the upload
        # runs from shared storage there (``_ship_inputs``), and the loop must start that one again
        once = str(request["entrypoint"])
        request["entrypoint"] = (
            f"n=0; until {once}; do rc=$?; n=$((n + 1)); "
            f'echo "{_RESTART_MARK} {role.name} after exit code $rc ($n)" >&2; '
            'sleep "$((n < 5 ? 1 << n : 30))"; done'
        )
    request["entrypoint_num_cpus"] = role.cpus
    if role.gpus:
        request["entrypoint_num_gpus"] = role.gpus
    else:
        request.pop("entrypoint_num_gpus", None)
    request.pop("entrypoint_memory", None)
    if role.memory is not None:
        amount = size_bytes(role.memory)
        if amount is None:
            raise UsageError(
                f"services.{role.name}.memory={role.memory!r}: expected a size such as 4Gi or 512M"
            )
        request["entrypoint_memory"] = amount
    request["metadata"]["rladapt.service"] = role.name
    return request


def _shared_dirs(value: Any) -> list[str]:
    """The ``shared`` option: comma-separated absolute directories, each mounted at the same path on every node."""
    if not value:
        return []
    dirs = [d.strip() for d in str(value).split(",") if d.strip()]
    relative = [d for d in dirs if not d.startswith("/")]
    if relative:
        raise UsageError(
            f"ray launcher: shared={value!r}: expected absolute directories separated by commas, found "
            f"{', '.join(repr(d) for d in relative)}"
        )
    return [os.path.normpath(d) for d in dirs]


def _upload_root(runtime_env: dict[str, Any]) -> str | None:
    """The working directory Ray uploads from here, None when it is a remote package (nothing of it here)."""
    working_dir = runtime_env.get("working_dir")
    return working_dir if isinstance(working_dir, str) and "://" not in working_dir else None


def written_paths(
    native: NativeLaunch, runtime_env: dict[str, Any], shared: list[str]
) -> tuple[list[Problem], list[str]]:
    """(problems, warnings) of the directories the job writes that others read, judged for Ray.

    The pool store (``spec.pool.store``) is read by ``rladapt pool``/``status`` here and by the service roles,
    each its own Ray job with its own copy of the working directory: off shared storage it is refused. The
    checkpoint directory (metrics and evaluation results under it) is refused when a service role reads it
    (``ServiceRole.reads``: the evaluator), else a warning (``launch --strict`` refuses it): ``rladapt
    checkpoints``, ``metrics`` and ``resume`` read it from here."""
    root = _upload_root(runtime_env)
    readers = {field for role in native.services for field in role.reads}
    publish = native.publish or {}
    store = publish.get("store")
    problems: list[Problem] = []
    warnings: list[str] = []
    for field, value, refused in (
        ("spec.pool.store", store if isinstance(store, str) else None, True),
        ("spec.checkpoint.dir", native.checkpoint_dir, "spec.checkpoint.dir" in readers),
    ):
        why = off_shared_storage(value, root, shared, Path.cwd()) if value else None
        if why is None:
            continue
        if refused:
            problems.append(Problem(field, why))
        else:
            warnings.append(f"{field} {why}")
    return problems, warnings


def _ship_inputs(
    native: NativeLaunch,
    runtime_env: dict[str, Any],
    command: Command,
    shared: list[str],
    written: list[Problem] | None = None,
) -> tuple[Command, list[str]]:
    """Make sure the job finds each path it reads (``NativeLaunch.inputs``) on the cluster: files an exclude would
    drop are shipped (a negated exclude, added to ``runtime_env`` in place), a relative interpreter left out of
    the upload runs from shared storage; anything else is refused here (a SpecError, exit 2), with the
    ``written`` problems (``written_paths``)."""
    working_dir = runtime_env.get("working_dir")
    if not native.inputs:
        if written:
            raise SpecError(written, "the ray launcher cannot give the job the files it reads and writes")
        return command, []
    if not isinstance(working_dir, str) or "://" in working_dir:
        # nothing is uploaded from here (a remote package): only absolute paths on shared storage are known
        working_dir = None
    verdict = check_inputs(
        native.inputs,
        working_dir if working_dir is not None else native.working_dir,
        list(runtime_env.get("excludes") or []) if working_dir is not None else ["*"],
        shared,
        Path.cwd(),
    )
    problems = [Problem(name, message) for name, message in verdict.problems] + list(written or [])
    if problems:
        raise SpecError(problems, "the ray launcher cannot give the job the files it reads and writes")
    if verdict.ship:
        runtime_env["excludes"] = [*(runtime_env.get("excludes") or []), *verdict.ship]
    if verdict.interpreter is not None:
        as_written = native.inputs.get("spec.runtime.python")
        argv = tuple(verdict.interpreter if item == as_written else item for item in command.argv)
        command = Command(argv=argv, env=command.env, ray_runtime_env=command.ray_runtime_env)
    return command, verdict.notes


def _settle_secrets(secret_env: dict[str, list[dict[str, str]]]) -> tuple[dict[str, str], dict[str, str]]:
    """(values, files) of the secrets settled at submit (``_secret_plan``), from this shell's environment."""
    values: dict[str, str] = {}
    files: dict[str, str] = {}
    unset = []
    for env, chain in secret_env.items():
        for source in chain:
            if "env" in source and source["env"] in os.environ:
                values[env] = os.environ[source["env"]]
                break
            if "file" in source:
                files[env] = source["file"]
                break
        else:
            unset.append(f"{env} (from {' or '.join('$' + s['env'] for s in chain)})")
    if unset:
        raise UsageError(f"secret source variables are not set in this shell: {', '.join(unset)}")
    return values, files


def _with_secrets(
    runtime_env: dict[str, Any], values: dict[str, str], files: dict[str, str]
) -> dict[str, Any]:
    """A copy of ``runtime_env`` carrying the secret values and files (only in the request sent, never rendered)."""
    out = json.loads(json.dumps(runtime_env))
    env_vars = dict(out.get("env_vars") or {})
    env_vars.update({k: v for k, v in values.items() if "$" not in v})
    literal = {k: v for k, v in values.items() if "$" in v}
    if literal:
        merged = {**json.loads(env_vars.get(LITERAL_ENV, "{}")), **literal}
        env_vars[LITERAL_ENV] = json_env_value(merged)
    if files:
        env_vars[SECRET_FILES_ENV] = json_env_value(
            {**json.loads(env_vars.get(SECRET_FILES_ENV, "{}")), **files}
        )
    if literal or files:
        existing = out.get("worker_process_setup_hook")
        if existing not in (None, WORKER_SETUP_HOOK):
            raise UsageError(
                f"the adapter's runtime_env sets worker_process_setup_hook={existing!r}, but rladapt needs "
                f"{WORKER_SETUP_HOOK!r} (secrets): Ray takes a single hook"
            )
        out["worker_process_setup_hook"] = WORKER_SETUP_HOOK
    out["env_vars"] = env_vars
    return out


_EXC_LINE = re.compile(r"^(?:\w+\.)*\w*(?:Error|Exception): (.+)$")


def _ray_error(exc: Exception) -> str:
    """The reason in a Ray SDK error; a refused request carries the server's whole traceback as text."""
    text = str(exc).strip()
    reasons = [m.group(1) for line in text.splitlines() if (m := _EXC_LINE.match(line.strip()))]
    return reasons[-1].rstrip(" .") + "." if reasons else text


def _http_address(address: str) -> str | None:
    if "://" not in address:
        return f"http://{address}"
    return address if address.startswith(("http://", "https://")) else None


def _probe(address: str, timeout: float) -> None:
    """Fail fast with a clear message: Ray's own client waits forever on an address that drops packets."""
    # here, not at the top: every render loads this plugin, and urllib.request brings http.client and ssl
    import urllib.error
    import urllib.request

    url = _http_address(address)
    if url is None:
        return
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/api/version", timeout=timeout) as response:
            response.read()
    except urllib.error.HTTPError as exc:
        raise LaunchError(
            f"{address} answered HTTP {exc.code} on /api/version: is it a Ray dashboard?"
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            raise _timed_out(address, timeout, "/api/version") from None
        raise LaunchError(
            f"cannot reach the Ray cluster at {address}: {reason}; start one with `ray start --head` or pass "
            f"the dashboard address with --launcher-opt address=http://HEAD:8265"
        ) from None


def _timed_out(address: str, timeout: float, what: str) -> LaunchError:
    return LaunchError(
        f"the Ray dashboard at {address} did not answer {what} within {timeout:g} s (the request_timeout "
        "option): the cluster is overloaded or the address is not a Ray dashboard"
    )


@functools.cache
def _timed_client_class() -> Callable[[str, float], JobSubmissionClient]:
    from ray.job_submission import JobSubmissionClient

    class TimedClient(JobSubmissionClient):
        """A JobSubmissionClient whose every HTTP request has a timeout.

        In Ray 2.60 (ray/dashboard/modules/dashboard_sdk.py, ``SubmissionClient._do_request``) every call of
        the job SDK, the version checks of ``__init__`` included, goes through ``_do_request``, which calls
        ``requests.request(method, url, ..., **kwargs)`` and passes no timeout: a dashboard that accepts the
        connection and never answers blocks the caller forever. Its keyword arguments are forwarded to
        ``requests.request``, so a default ``timeout`` here reaches every request.
        """

        def __init__(self, address: str, timeout: float) -> None:
            self._rladapt_timeout = timeout  # before super().__init__, which already makes requests
            super().__init__(address)

        def _do_request(self, method: str, endpoint: str, **kwargs: Any) -> Any:
            kwargs.setdefault("timeout", self._rladapt_timeout)
            return super()._do_request(method, endpoint, **kwargs)

    return TimedClient


def _client(address: str, timeout: float) -> JobSubmissionClient:
    _probe(address, timeout)
    try:
        import requests

        cls = _timed_client_class()
    except ImportError as exc:
        raise LaunchError(
            f"the ray launcher needs Ray's job client: pip install 'rladapt[ray]' (ray[default]) ({exc})"
        ) from None
    try:
        return cls(address, timeout)
    except requests.exceptions.Timeout:
        raise _timed_out(address, timeout, "the version check") from None
    except Exception as exc:  # Ray raises ConnectionError/RuntimeError/ValueError for a bad or dead address
        raise LaunchError(f"cannot reach the Ray cluster at {address}: {exc}") from None


def _request(address: str, timeout: float, what: str, call: Callable[[], T]) -> T:
    """``call()`` (one SDK call), with a stalled or vanished dashboard turned into a LaunchError."""
    import requests

    try:
        return call()
    except requests.exceptions.Timeout:
        raise _timed_out(address, timeout, what) from None
    except OSError as exc:  # requests' ConnectionError: the cluster went away between calls
        raise LaunchError(f"lost the Ray cluster at {address} while {what}: {exc}") from None


def _address(request: dict[str, Any]) -> str | None:
    """Where the job goes: the address option, else ``$RAY_ADDRESS`` of the submitting shell."""
    return str(request.get("address") or "") or os.environ.get(ADDRESS_ENV) or None


def _job_id(handle: dict[str, Any]) -> str:
    return str(handle["submission_id"])


def _timeout(handle: dict[str, Any]) -> float:
    """The handle's request timeout (a handle saved before there was one gets the default)."""
    value = handle.get("request_timeout")
    return float(value) if isinstance(value, (int, float)) and value > 0 else DEFAULT_REQUEST_TIMEOUT


#: How Ray's job SDK reports an unknown submission id (ray 2.60, dashboard_sdk.py ``_raise_error``:
#: ``Request failed with status code 404: ...``, from job/sdk.py ``get_job_info``).
_NOT_FOUND = re.compile(r"status code 404\b")


class RayLauncher(Launcher):
    PLUGIN_NAME = "ray"
    DESCRIPTION = (
        "Submit to an existing Ray cluster through the Job Submission API (address or $RAY_ADDRESS)."
    )
    OPTIONS = (
        Option("address", str, f"Ray dashboard address, e.g. http://head:8265 (default: ${ADDRESS_ENV})"),
        Option("entrypoint_num_cpus", float, "CPUs reserved for the driver (entrypoint)", minimum=0),
        Option("entrypoint_num_gpus", float, "GPUs reserved for the driver (entrypoint)", minimum=0),
        Option("entrypoint_memory", float, "memory in bytes reserved for the driver (entrypoint)", minimum=0),
        Option(
            "shared",
            str,
            "absolute directories (comma-separated) that every node of the cluster mounts at the same path: the "
            "job may read paths there, and runs a relative interpreter left out of the upload (a virtualenv) from "
            "there",
        ),
        Option(
            "request_timeout",
            float,
            "seconds each request to the Ray dashboard may wait for an answer",
            default=DEFAULT_REQUEST_TIMEOUT,
            minimum=0.1,
            maximum=3600,
        ),
    )

    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
        request = render_request(native, options, command, run_id)
        check_services(native, self.PLUGIN_NAME)
        if native.services:  # each its own Ray job beside the driver's (render_service)
            request["services"] = [
                {
                    "name": r.name,
                    "outlives_job": r.outlives_job,
                    "request": render_service(native, options, r, run_id),
                }
                for r in native.services
            ]
        runtime_env = request.get("runtime_env") or {}
        shared = list(request.get("shared") or [])
        _, warnings = written_paths(native, runtime_env, shared)
        return Artifacts(launcher=self.PLUGIN_NAME, request=request, warnings=warnings)

    def intent(self, artifacts: Artifacts, run_id: str) -> dict[str, Any]:
        request = artifacts.request
        return {
            "address": _address(request),
            "submission_id": str(request.get("submission_id") or run_id),
            "request_timeout": _timeout(request),
        }

    def find(self, intent: dict[str, Any], run_dir: Path) -> dict[str, Any] | None:
        address = intent.get("address")
        if not address:
            raise LaunchError(
                "cannot look the Ray job up: its intent records no cluster address (none was given and "
                f"${ADDRESS_ENV} was not set)"
            )
        job_id, timeout = str(intent["submission_id"]), _timeout(intent)
        handle: dict[str, Any] = {
            "address": str(address),
            "submission_id": job_id,
            "request_timeout": timeout,
        }
        client = _client(str(address), timeout)
        try:
            _request(address, timeout, f"reading job {job_id}", lambda: client.get_job_info(job_id))
        except LaunchError:
            raise
        except Exception as exc:  # RuntimeError with the server's answer
            if _NOT_FOUND.search(str(exc)):
                return None  # the submission id was never accepted: nothing runs under it
            raise LaunchError(f"cannot look up Ray job {job_id} at {address}: {_ray_error(exc)}") from None
        return handle

    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        request = {k: v for k, v in artifacts.request.items() if k not in _LOCAL_KEYS}
        address = _address(artifacts.request)
        timeout = _timeout(artifacts.request)
        secret_env = artifacts.request.get("secret_env") or {}
        if not address:
            raise LaunchError(
                f"no Ray cluster address: pass --launcher-opt address=http://HEAD:8265 or set {ADDRESS_ENV}"
            )
        refuse_missing_inputs(
            artifacts.request.get("inputs") or {},
            str(artifacts.request.get("working_dir", ".")),
            self.PLUGIN_NAME,
            shared=list(artifacts.request.get("shared") or []),
        )
        if secret_env:
            request["runtime_env"] = _with_secrets(
                request.get("runtime_env") or {}, *_settle_secrets(secret_env)
            )
        client = _client(address, timeout)
        try:
            submission_id = _request(
                address, timeout, "the job submission", lambda: client.submit_job(**request)
            )
        except LaunchError:
            raise
        except Exception as exc:  # Ray reports a refused submission as RuntimeError with the server's text
            raise LaunchError(f"the Ray cluster at {address} refused the job: {_ray_error(exc)}") from None
        handle: dict[str, Any] = {
            "address": address,
            "submission_id": submission_id,
            "request_timeout": timeout,
        }
        if artifacts.request.get("services"):
            handle["services"] = self._submit_services(
                artifacts.request, client, address, timeout, submission_id
            )
        return handle

    def _submit_services(
        self, request: dict[str, Any], client: JobSubmissionClient, address: str, timeout: float, job_id: str
    ) -> list[dict[str, Any]]:
        """Submit each service role's job after the driver's; on a refusal, stop what was submitted (the driver's
        job included) so that nothing of a failed launch runs."""
        secret_env = request.get("secret_env") or {}
        submitted: list[dict[str, Any]] = []
        for item in request["services"]:
            sub = {k: v for k, v in dict(item["request"]).items() if k not in _LOCAL_KEYS}
            if secret_env:
                sub["runtime_env"] = _with_secrets(sub.get("runtime_env") or {}, *_settle_secrets(secret_env))
            try:
                sid = _request(
                    address,
                    timeout,
                    f"submitting service {item['name']}",
                    functools.partial(client.submit_job, **sub),
                )
            except Exception as exc:
                for started in [job_id, *(s["submission_id"] for s in submitted)]:
                    with contextlib.suppress(Exception):  # best effort: the refusal is what the user must see
                        client.stop_job(started)
                detail = exc.message if isinstance(exc, LaunchError) else _ray_error(exc)
                raise LaunchError(
                    f"the Ray cluster at {address} refused the job of service {item['name']}: {detail}; the "
                    "run's jobs were stopped"
                ) from None
            submitted.append(
                {"name": item["name"], "submission_id": sid, "outlives_job": bool(item.get("outlives_job"))}
            )
        return submitted

    def services(self, handle: dict[str, Any], run_dir: Path) -> tuple[ServiceStatus, ...]:
        """Each role's Ray job. A role that does not outlive the training ends by itself once the driver's job
        has ended (its wrapper, ``rladapt.launchers.ends_with_job``, watches the job's end marker); one still
        running when rladapt next looks (``status``, ``runs --refresh``, ``stop``) after that is stopped here."""
        entries = [e for e in handle.get("services") or [] if isinstance(e, dict) and e.get("submission_id")]
        if not entries:
            return ()
        address, timeout = str(handle["address"]), _timeout(handle)
        client = _client(address, timeout)
        driver_ended = self.status(handle, run_dir).terminal
        out = []
        for entry in entries:
            sid, name = str(entry["submission_id"]), str(entry.get("name"))
            unit = f"Ray job {sid}"
            try:
                info = _request(
                    address, timeout, f"reading job {sid}", functools.partial(client.get_job_info, sid)
                )
                state = str(getattr(info.status, "value", info.status))
                if driver_ended and not entry.get("outlives_job") and state in ("PENDING", "RUNNING"):
                    _request(address, timeout, f"stopping job {sid}", functools.partial(client.stop_job, sid))
                    state = "STOPPED"
                    message = "the job ended"
                else:
                    message = (info.message or "").strip()
                logs = _request(
                    address,
                    timeout,
                    f"reading the logs of {sid}",
                    functools.partial(client.get_job_logs, sid),
                )
            except LaunchError:
                raise
            except Exception as exc:
                out.append(
                    ServiceStatus(name, "UNKNOWN", 0, unit, f"Ray has no job {sid}: {_ray_error(exc)}")
                )
                continue
            # lines that begin with the mark: Ray's own log may also quote the entrypoint, which holds it
            restarts = len(re.findall(rf"^{re.escape(_RESTART_MARK)} ", logs, re.M))
            known = state if state in _STATES else "UNKNOWN"
            out.append(ServiceStatus(name, known, restarts, unit, message))  # type: ignore[arg-type]
        return tuple(out)

    def status(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        address, timeout, job_id = str(handle["address"]), _timeout(handle), _job_id(handle)
        client = _client(address, timeout)
        try:
            info = _request(address, timeout, f"reading job {job_id}", lambda: client.get_job_info(job_id))
        except LaunchError:
            raise
        except Exception as exc:
            return RunStatus("UNKNOWN", None, f"Ray has no job {job_id}: {_ray_error(exc)}")
        state = str(getattr(info.status, "value", info.status))
        return RunStatus(
            state if state in _STATES else "UNKNOWN",  # type: ignore[arg-type]
            info.driver_exit_code,
            (info.message or "").strip(),
        )

    def logs(self, handle: dict[str, Any], run_dir: Path, follow: bool = False) -> Iterator[str]:
        address, timeout, job_id = str(handle["address"]), _timeout(handle), _job_id(handle)
        client = _client(address, timeout)
        seen = 0
        pending = ""
        while True:
            try:
                # Status first: once it is terminal, the logs read after it are complete.
                done = not follow or _request(
                    address,
                    timeout,
                    f"reading the status of job {job_id}",
                    lambda: self._terminal(client, job_id),
                )
                text = _request(
                    address, timeout, f"reading the logs of job {job_id}", lambda: client.get_job_logs(job_id)
                )
            except LaunchError:
                raise
            except Exception as exc:
                raise LaunchError(f"cannot read the logs of Ray job {job_id}: {_ray_error(exc)}") from None
            chunk, seen = text[seen:], max(seen, len(text))
            lines, pending = complete_lines(pending, chunk)
            yield from lines
            if done:
                break
            time.sleep(1.0)
        if pending:
            yield pending

    def stop(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        self._stop_services(handle)
        current = self.status(handle, run_dir)
        if current.terminal:
            return nothing_to_stop(current)
        address, timeout, job_id = str(handle["address"]), _timeout(handle), _job_id(handle)
        client = _client(address, timeout)
        try:
            _request(address, timeout, f"stopping job {job_id}", lambda: client.stop_job(job_id))
        except LaunchError:
            raise
        except Exception as exc:
            raise LaunchError(f"Ray refused to stop job {job_id}: {_ray_error(exc)}") from None
        deadline = time.monotonic() + STOP_WAIT
        status = self.status(handle, run_dir)
        while not status.terminal and time.monotonic() < deadline:
            time.sleep(0.5)
            status = self.status(handle, run_dir)
        return status

    def _stop_services(self, handle: dict[str, Any]) -> None:
        """Stop every service role's job still running, outliving ones included: ``rladapt stop`` ends them."""
        entries = [e for e in handle.get("services") or [] if isinstance(e, dict) and e.get("submission_id")]
        if not entries:
            return
        address, timeout = str(handle["address"]), _timeout(handle)
        client = _client(address, timeout)
        for entry in entries:
            sid = str(entry["submission_id"])
            try:
                if not self._terminal(client, sid):
                    _request(address, timeout, f"stopping job {sid}", functools.partial(client.stop_job, sid))
            except LaunchError:
                raise
            except Exception as exc:
                if _NOT_FOUND.search(str(exc)):
                    continue  # Ray has no such job (deleted, or its submission never happened): nothing to stop
                raise LaunchError(
                    f"Ray refused to stop the job {sid} of a service: {_ray_error(exc)}"
                ) from None

    @staticmethod
    def _terminal(client: JobSubmissionClient, job_id: str) -> bool:
        return bool(client.get_job_status(job_id).is_terminal())


@hookimpl
def rladapt_register_launchers() -> list[Launcher]:
    return [RayLauncher()]
