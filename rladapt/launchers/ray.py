"""The ``ray`` launcher: a Ray job on an existing cluster, through Ray's Job Submission API.

``render`` returns the exact ``JobSubmissionClient.submit_job`` request: the entrypoint (the native argv behind
the patch bootstrap, shell-quoted: Ray runs it through a shell), the runtime_env (the adapter's, with the job
environment, the adapter's files for the bootstrap to write, and ``worker_process_setup_hook`` when runtime
patches apply), the submission id and metadata. Three more keys are not sent to Ray: ``address`` (from
``--launcher-opt address=...``; else ``$RAY_ADDRESS`` at submit time), ``request_timeout`` (how long each HTTP
request to the dashboard may wait) and ``secret_env`` (job variable -> variable of the submitting shell),
resolved only at submit so that no secret value is ever rendered.

The submission id is the run id, chosen before the submission: ``intent`` records it with the address, and
``find`` asks the Job API for it when the submitter died before it saved the handle.

Ray itself is imported lazily: ``rladapt`` starts without it, and only this launcher needs ``ray[default]``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rladapt.bootstrap import FILES_ENV, LITERAL_ENV, WORKER_SETUP_HOOK, json_env_value
from rladapt.launchers._common import complete_lines, nothing_to_stop, refuse_role_resources, run_id_option
from rladapt.plugins import Artifacts, Launcher, NativeLaunch, RunStatus, hookimpl
from rladapt.plugins.launcher import Command, Option
from rladapt.primitives.errors import LaunchError, UsageError

if TYPE_CHECKING:
    from ray.job_submission import JobSubmissionClient

T = TypeVar("T")
ADDRESS_ENV = "RAY_ADDRESS"
#: Request keys that are instructions to this launcher, not arguments of ``submit_job``.
_LOCAL_KEYS = ("address", "request_timeout", "secret_env")
_NUMERIC_OPTIONS = ("entrypoint_num_cpus", "entrypoint_num_gpus", "entrypoint_memory")
_STATES = {"PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED"}
#: Seconds each HTTP request to the dashboard may wait to connect, and then between bytes of the answer.
DEFAULT_REQUEST_TIMEOUT = 30.0
STOP_WAIT = 30.0


def _secret_env(native: NativeLaunch) -> dict[str, str]:
    out = {}
    for secret in native.secrets:
        if secret.kind == "env":
            out[secret.env] = secret.name
        elif secret.kind == "file":
            raise UsageError(
                f"secret {secret.env} comes from the file {secret.name!r}, which the ray launcher cannot read on "
                f"the cluster's nodes; use `from: {{env: VAR}}` (read from your shell at submit time)"
            )
        else:
            ref = f"{secret.name}/{secret.key}" if secret.key else secret.name
            raise UsageError(
                f"secret {secret.env} comes from the Kubernetes secret {ref!r}, which the ray launcher cannot "
                f"read; use `from: {{env: VAR}}`, or --launcher kubernetes"
            )
    return out


def render_request(native: NativeLaunch, options: dict[str, Any], command: Command) -> dict[str, Any]:
    """The submit request that runs ``command`` for ``native``; pure."""
    opts = RayLauncher.merge_options(native, options)
    refuse_role_resources(
        native,
        RayLauncher.PLUGIN_NAME,
        "a Ray job runs on an existing cluster, where the framework creates the actors of each role and gives "
        "them their resources; the job submission API reserves CPUs and memory for the driver only "
        "(-o entrypoint_num_cpus, -o entrypoint_memory)",
    )
    runtime_env = json.loads(json.dumps(native.runtime_env))  # a deep copy of the adapter's value
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
    # Env values holding '$' are set in each worker by the same hook that applies the runtime patches.
    additions = {
        **command.ray_runtime_env,
        **({"worker_process_setup_hook": WORKER_SETUP_HOOK} if literal else {}),
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
    run_id = run_id_option(opts, RayLauncher.PLUGIN_NAME)
    if run_id:
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
    secret_env = _secret_env(native)
    if secret_env:
        request["secret_env"] = secret_env
    return request


def _with_secrets(runtime_env: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    """A copy of ``runtime_env`` carrying the secret values (only ever in the request sent, never rendered)."""
    out = json.loads(json.dumps(runtime_env))
    env_vars = dict(out.get("env_vars") or {})
    env_vars.update({k: v for k, v in values.items() if "$" not in v})
    literal = {k: v for k, v in values.items() if "$" in v}
    if literal:
        merged = {**json.loads(env_vars.get(LITERAL_ENV, "{}")), **literal}
        env_vars[LITERAL_ENV] = json_env_value(merged)
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
        raise LaunchError(f"the ray launcher needs `pip install 'ray[default]'` ({exc})") from None
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
            "request_timeout",
            float,
            "seconds each request to the Ray dashboard may wait for an answer",
            default=DEFAULT_REQUEST_TIMEOUT,
            minimum=0.1,
            maximum=3600,
        ),
    )

    def render(self, native: NativeLaunch, options: dict[str, Any]) -> Artifacts:
        return Artifacts(
            launcher=self.PLUGIN_NAME, request=render_request(native, options, self.command(native))
        )

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
        missing = [
            f"{env} (from ${source})" for env, source in secret_env.items() if source not in os.environ
        ]
        if missing:
            raise UsageError(f"secret source variables are not set in this shell: {', '.join(missing)}")
        if secret_env:
            request["runtime_env"] = _with_secrets(
                request.get("runtime_env") or {},
                {env: os.environ[source] for env, source in secret_env.items()},
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
        return {"address": address, "submission_id": submission_id, "request_timeout": timeout}

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

    @staticmethod
    def _terminal(client: JobSubmissionClient, job_id: str) -> bool:
        return bool(client.get_job_status(job_id).is_terminal())


@hookimpl
def rladapt_register_launchers() -> list[Launcher]:
    return [RayLauncher()]
