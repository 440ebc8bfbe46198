"""The sbatch script of the ``slurm`` launcher, and the options it is rendered from (pure)."""

from __future__ import annotations

import json
import math
import re
import shlex
from typing import Any

from rladapt.launchers._common import (
    check_env_name,
    check_run_id,
    file_lines,
    pool_needs,
    quote_path,
    ray_job_config_lines,
    secret_lines,
    size_bytes,
)
from rladapt.plugins import NativeLaunch
from rladapt.plugins.job import PREVIOUS_EXIT_ENV, RESTART_ENV
from rladapt.plugins.launcher import STOP_REQUEST_FILE, Command, Option
from rladapt.primitives.errors import UsageError

PLUGIN_NAME = "slurm"
SCRIPT = "job.sbatch"
#: sbatch's own default name; relative, so it lands in the ``--chdir`` directory (the run directory).
OUTPUT_PATTERN = "slurm-%j.out"
EXIT_SUFFIX = ".exit"
DEFAULT_RAY_PORT = 6379
DEFAULT_RAY_WAIT = 600

# All of these are used with fullmatch: a "$" anchor would also accept a trailing newline.
# #SBATCH lines are parsed by sbatch, not by a shell: values are limited to characters that need no quoting.
_NAME_LIST = r"[A-Za-z0-9_.+-]+(,[A-Za-z0-9_.+-]+)*"
_TIME = (
    r"\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}"
    r"|UNLIMITED|INFINITE|unlimited|infinite"
)
_MEM = r"\d+[KMGTkmgt]?"
_CONSTRAINT = r"[A-Za-z0-9_.,&|*!:()\[\]-]+"
_JOB_NAME_DROP = re.compile(r"[^A-Za-z0-9_.-]+")


def _shell_words(value: str) -> str | None:
    try:
        shlex.split(value)
    except ValueError as exc:
        return f"shell words ({exc})"
    return None


_NAMES = "a comma-separated name list"
#: The options of the slurm launcher; ``ScriptOptions`` turns them into the script's settings.
OPTIONS = (
    Option("partition", str, "Slurm partition (#SBATCH --partition)", pattern=_NAME_LIST, expected=_NAMES),
    Option("account", str, "account to charge (#SBATCH --account)", pattern=_NAME_LIST, expected=_NAMES),
    Option("qos", str, "quality of service (#SBATCH --qos)", pattern=_NAME_LIST, expected=_NAMES),
    Option(
        "reservation", str, "reservation name (#SBATCH --reservation)", pattern=_NAME_LIST, expected=_NAMES
    ),
    Option(
        "time",
        str,
        "time limit, e.g. 4:00:00 or 2-00:00:00 (default: spec.lifecycle.timeout_seconds, if set)",
        pattern=_TIME,
        expected="a Slurm time such as 90, 4:00:00 or 2-00:00:00",
    ),
    Option(
        "mem",
        str,
        "memory per node, e.g. 200G (#SBATCH --mem; default: the largest spec.roles.<role>.memory, else the "
        "cluster's)",
        pattern=_MEM,
        expected="a size such as 64G or 500M",
    ),
    Option(
        "constraint",
        str,
        "node features (#SBATCH --constraint)",
        pattern=_CONSTRAINT,
        expected="a Slurm constraint",
    ),
    Option(
        "exclusive",
        bool,
        "true: whole nodes (#SBATCH --exclusive); default: true when nothing asks for a CPU count "
        "(spec.roles.<role>.cpus_per_gpu, cpus_per_task) in a run with GPUs, since Ray is told every CPU Slurm "
        "gives the job; false: Slurm's default allocation",
    ),
    Option(
        "cpus_per_task",
        int,
        "CPUs per node, also Ray's --num-cpus (default: --cpus-per-gpu from spec.roles.<role>.cpus_per_gpu, "
        "else what Slurm allocates)",
        minimum=1,
    ),
    Option(
        "gpus_per_node",
        int,
        "only the placement's GPUs per node (the default; #SBATCH --gpus-per-node and Ray's --num-gpus), or 0 "
        "for a CPU-only test run: no GPUs asked of Slurm and Ray counts the node's own; any other value is "
        "refused (change spec.placement instead)",
        minimum=0,
    ),
    Option("job_name", str, "Slurm job name (default: the run id)"),
    Option("ray", bool, "false: run the driver with srun only, without starting a Ray cluster", default=True),
    Option(
        "ray_port",
        int,
        f"GCS port of the Ray head (default: the spec's ray port, else {DEFAULT_RAY_PORT})",
        minimum=1,
        maximum=65535,
    ),
    Option(
        "ray_wait",
        int,
        "seconds to wait for every node to join the Ray cluster",
        default=DEFAULT_RAY_WAIT,
        minimum=1,
    ),
    Option("object_store_memory", int, "bytes of Ray object store per node (default: Ray's)", minimum=1),
    Option(
        "ray_args",
        str,
        "extra arguments of every `ray start`, shell-split, e.g. '--ray-client-server-port=10'",
        default="",
        validator=_shell_words,
    ),
    Option(
        "srun_args",
        str,
        "extra arguments for every srun step, shell-split, e.g. pyxis '--container-image=IMG'",
        default="",
        validator=_shell_words,
    ),
    Option(
        "driver_srun",
        bool,
        "true: run the driver as an srun step (with srun_args) instead of in the batch shell",
        default=False,
    ),
)


def _job_name(native: NativeLaunch, opts: dict[str, Any], run_id: str | None) -> str:
    raw = str(opts.get("job_name") or run_id or native.job_name)
    name = _JOB_NAME_DROP.sub("-", raw).strip("-.")[:100]
    return name or "rladapt"


def _time_limit(opts: dict[str, Any], native: NativeLaunch) -> str | None:
    if "time" in opts:
        return str(opts["time"])
    seconds = native.lifecycle.get("timeout_seconds")
    if not seconds:
        return None
    minutes = max(1, math.ceil(int(seconds) / 60))
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    return f"{days}-{hours:02d}:{mins:02d}:00" if days else f"{hours:02d}:{mins:02d}:00"


class ScriptOptions:
    """The settings of one script, from the merged options (``SlurmLauncher.merge_options``) and the launch."""

    def __init__(self, native: NativeLaunch, merged: dict[str, Any], run_id: str | None = None) -> None:
        self.job_name = _job_name(native, merged, check_run_id(run_id, PLUGIN_NAME))
        self.sbatch: list[tuple[str, str]] = [
            (key, merged[key]) for key in ("partition", "account", "qos", "reservation") if key in merged
        ]
        limit = _time_limit(merged, native)
        if limit:
            self.sbatch.append(("time", limit))
        #: Comment lines for the script: what of spec.roles the options overrode or a CPU-only run leaves out.
        self.notes: list[str] = []
        needs = pool_needs(native).values()
        memory = max((n for n in needs if n.memory_bytes), key=lambda n: n.memory_bytes or 0, default=None)
        if "mem" in merged:
            self.sbatch.append(("mem", merged["mem"]))
            if memory is not None:
                self.notes.append(
                    f"spec.roles.{memory.memory_role}.memory={memory.memory}: overridden by mem"
                )
        elif memory is not None and memory.memory_bytes is not None:
            # sbatch(1) --mem: "the real memory required per node". One allocation of alike nodes: every node
            # is sized for the most demanding pool.
            self.sbatch.append(("mem", slurm_size(memory.memory_bytes)))
        if "constraint" in merged:
            self.sbatch.append(("constraint", merged["constraint"]))
        exclusive: bool | None = merged.get("exclusive")
        self.gpus_per_node = native.gpus_per_node
        #: True for ``gpus_per_node=0`` over a placement with GPUs: a CPU-only test run, where Ray counts GPUs.
        self.cpu_only = False
        if "gpus_per_node" in merged:
            gpus = merged["gpus_per_node"]
            if gpus == 0:
                self.cpu_only = native.gpus_per_node > 0
                self.gpus_per_node = 0
            elif gpus != native.gpus_per_node:
                # The framework sizes its workers from the placement: other GPU counts would leave them
                # waiting for GPUs Ray does not have, or idle GPUs the job paid for.
                raise UsageError(
                    f"slurm launcher option gpus_per_node={str(gpus)!r} contradicts the "
                    f"placement; expected {native.gpus_per_node} (spec.placement's GPUs per node) or 0 for a "
                    f"CPU-only test run, found {gpus}; change spec.placement instead"
                )
        self.cpus_per_task: int | None = merged.get("cpus_per_task")
        cpus = max((n for n in needs if n.cpus_per_gpu), key=lambda n: n.cpus_per_gpu or 0, default=None)
        #: --cpus-per-gpu, from spec.roles.<role>.cpus_per_gpu. sbatch(1): "processors per allocated GPU ... Not
        #: compatible with the --cpus-per-task option", so an explicit cpus_per_task replaces it.
        self.cpus_per_gpu: int | None = None
        if cpus is not None:
            source = f"spec.roles.{cpus.cpus_role}.cpus_per_gpu={cpus.cpus_per_gpu}"
            if self.cpus_per_task is not None:
                self.notes.append(f"{source}: overridden by cpus_per_task")
            elif self.gpus_per_node == 0:
                self.notes.append(f"{source}: not asked of Slurm in a run without GPUs")
            else:
                self.cpus_per_gpu = cpus.cpus_per_gpu
        # Ray is told the CPUs Slurm allocates ($SLURM_CPUS_ON_NODE, the driver's `ray start --num-cpus`), so
        # Slurm must be asked for them: a count (--cpus-per-gpu, --cpus-per-task) or the whole node. Without
        # either, Slurm allocates its default (1 CPU per task unless the cluster sets DefCpuPerGPU) and the
        # frameworks' CPU bundles (one or more per GPU worker) wait forever for CPUs Ray does not have.
        asked = self.cpus_per_task is not None or self.cpus_per_gpu is not None
        if exclusive is None:
            exclusive = not asked and self.gpus_per_node > 0
            if exclusive:
                self.notes.append(
                    "CPUs: whole nodes (--exclusive): no CPU count is asked (spec.roles.<role>.cpus_per_gpu, "
                    "-o cpus_per_task=N), and Ray is told every CPU Slurm gives the job ($SLURM_CPUS_ON_NODE); "
                    "-o exclusive=false keeps Slurm's default allocation"
                )
        self.exclusive: bool = exclusive
        self.ray: bool = merged["ray"]
        ray_ports = [p.port for p in native.ports if p.purpose == "ray"]
        self.ray_port: int = merged.get("ray_port", ray_ports[0] if ray_ports else DEFAULT_RAY_PORT)
        dashboards = [p.port for p in native.ports if p.purpose == "dashboard"]
        self.dashboard_port: int | None = dashboards[0] if dashboards else None
        self.ray_wait: int = merged["ray_wait"]
        self.object_store_memory: int | None = merged.get("object_store_memory")
        self.ray_args = shlex.split(merged["ray_args"])
        self.srun_args = shlex.split(merged["srun_args"])
        self.driver_srun: bool = merged["driver_srun"]


def slurm_size(amount: int) -> str:
    """Bytes as sbatch's ``--mem`` size: whole G or M (Slurm's units are powers of 1024), else K rounded up."""
    for unit, factor in (("G", 1024**3), ("M", 1024**2)):
        if amount % factor == 0:
            return f"{amount // factor}{unit}"
    return f"{math.ceil(amount / 1024)}K"


def _sbatch_lines(native: NativeLaunch, opts: ScriptOptions) -> list[str]:
    lines = [
        f"#SBATCH --job-name={opts.job_name}",
        f"#SBATCH --nodes={native.total_nodes}",
        "#SBATCH --ntasks-per-node=1",
    ]
    if opts.gpus_per_node > 0:
        lines.append(f"#SBATCH --gpus-per-node={opts.gpus_per_node}")
    if opts.cpus_per_task is not None:
        lines.append(f"#SBATCH --cpus-per-task={opts.cpus_per_task}")
    if opts.cpus_per_gpu is not None:
        lines.append(f"#SBATCH --cpus-per-gpu={opts.cpus_per_gpu}")
    lines.extend(f"#SBATCH --{key}={value}" for key, value in opts.sbatch)
    if opts.exclusive:
        lines.append("#SBATCH --exclusive")
    lines.append(f"#SBATCH --output={OUTPUT_PATTERN}")
    return lines


def _volume_lines(native: NativeLaunch) -> list[str]:
    """Slurm mounts nothing: a volume must already be at its mount path on the nodes (a shared filesystem)."""
    lines = []
    for volume in native.volumes:
        if volume.kind == "memory":
            lines.append(
                f"# volume {json.dumps(volume.name)}: memory-backed {json.dumps(volume.mount)} is the "
                "node's own (its size is not set)"
            )
            continue
        message = (
            f"rladapt: volume {volume.name} ({volume.kind} {volume.source}) is expected at {volume.mount}, "
            "which does not exist on this node; Slurm mounts nothing, so make it available on every node"
        )
        lines.append(f"[[ -e {quote_path(volume.mount)} ]] || {{ echo {shlex.quote(message)} >&2; exit 1; }}")
    return lines


def _srun(opts: ScriptOptions, *args: str) -> str:
    return shlex.join(["srun", *opts.srun_args, *args])


def _ray_start_args(opts: ScriptOptions) -> str:
    # A CPU-only test run leaves the GPU count to Ray: an explicit 0 would contradict what the framework asks.
    args = [] if opts.cpu_only else [f"--num-gpus={opts.gpus_per_node}"]
    args.append("--disable-usage-stats")
    if opts.object_store_memory is not None:
        args.append(f"--object-store-memory={opts.object_store_memory}")
    return shlex.join(args + opts.ray_args)


# The EXIT trap records the exit code next to the output file first (scancel sends SIGKILL KillWait seconds
# after SIGTERM, which may cut the rest short), then stops the Ray steps (srun ends its step on SIGTERM) and
# removes Ray's session logs unless the job failed. TERM (scancel, time limit) and INT end the script through
# it too; bash runs them once the foreground command returned, which the same signal also ends.
_TRAP = r"""rladapt_cleanup() {
  local rc=$?
  trap - EXIT
  { printf '%s\n' "$rc" > "$rladapt_exit_file.tmp" \
    && mv -f -- "$rladapt_exit_file.tmp" "$rladapt_exit_file"; } 2>/dev/null || true
  if ((${#rladapt_ray_pids[@]})); then
    if ((rc != 0)); then echo "rladapt: Ray logs kept in $rladapt_ray_tmp on $(hostname)" >&2; fi
    echo "rladapt: stopping the Ray cluster" >&2
    kill -TERM "${rladapt_ray_pids[@]}" 2>/dev/null || true
    wait "${rladapt_ray_pids[@]}" 2>/dev/null || true
    if ((rc == 0)); then rm -rf -- "$rladapt_ray_tmp"; fi
  fi
  exit "$rc"
}
rladapt_ray_pids=()
trap rladapt_cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT"""

# Counts the nodes `ray status` lists as active or idle (autoscaler v1 and v2 formats); 0 until it can tell.
_RAY_NODES = r"""rladapt_ray_nodes() {
  { ray status --address="$RAY_ADDRESS" 2>/dev/null || true; } | awk '
    /^(Active|Idle):/ { section = 1; next }
    /^[A-Za-z]/ { section = 0 }
    section && $1 ~ /^[0-9]+$/ && $2 ~ /^node_/ { n += $1 }
    END { print n + 0 }'
}"""


#: srun arguments of every step that starts a Ray node. ``--overlap``: a Ray node is a long-lived step that
#: shares its node with the driver, and Ray divides the node among its own workers. Without it the Ray head's
#: step holds the job's memory on the node, and on Slurm 22.05.8 a driver step (-o driver_srun=true) is then
#: refused even with --overlap of its own ("Unable to create step for job N: Memory required by task is not
#: available") when the job's memory comes per CPU (DefMemPerCPU, no `mem` option), although srun(1) of that
#: version says --overlap "allows steps to share all resources (CPUs, memory, and GRES) with all other steps
#: ... even those that did not specify --overlap". With --overlap on both steps the driver step starts
#: (tested on the real single-node Slurm: test_driver_as_an_srun_step_next_to_the_jobs_ray_cluster).
_RAY_STEP = ("--overlap", "--nodes=1", "--ntasks=1")


def _ray_lines(native: NativeLaunch, opts: ScriptOptions) -> list[str]:
    start = _ray_start_args(opts)
    port = opts.ray_port
    head_args = [f"--port={port}"]
    if opts.dashboard_port is not None:
        head_args += ["--include-dashboard=true", f"--dashboard-port={opts.dashboard_port}"]
    else:
        head_args.append("--include-dashboard=false")
    cpus = str(opts.cpus_per_task) if opts.cpus_per_task is not None else '"$SLURM_CPUS_ON_NODE"'
    wait = opts.ray_wait
    return [
        "",
        "# --- Ray: the head on this node (the first of the allocation), a worker on every other node ---",
        'mapfile -t rladapt_nodes < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        'rladapt_head="$SLURMD_NODENAME"',
        # Debian maps the host name to 127.0.1.1: other nodes could never reach that address.
        "rladapt_head_ip=\"$(hostname --ip-address 2>/dev/null | awk '{print $1}')\" || true",
        "if [[ -z $rladapt_head_ip ]] \\",
        "  || { ((SLURM_JOB_NUM_NODES > 1)) && [[ $rladapt_head_ip == 127.* ]]; }; then",
        "  rladapt_head_ip=\"$(hostname -I 2>/dev/null | awk '{print $1}')\" || true",
        "fi",
        ': "${rladapt_head_ip:=127.0.0.1}"',
        f'export RAY_ADDRESS="$rladapt_head_ip:{port}"',
        'rladapt_ray_tmp="/tmp/ray-$SLURM_JOB_ID"',
        f"rladapt_ray_cpus={cpus}",
        'echo "rladapt: starting the Ray head on $rladapt_head ($RAY_ADDRESS), $SLURM_JOB_NUM_NODES node(s)"',
        f'{_srun(opts, *_RAY_STEP)} -w "$rladapt_head" \\',
        '  ray start --head --block --node-ip-address="$rladapt_head_ip" --num-cpus="$rladapt_ray_cpus" \\',
        f'  --temp-dir="$rladapt_ray_tmp" {shlex.join(head_args)} {start} &',
        "rladapt_ray_pids+=($!)",
        'for rladapt_node in "${rladapt_nodes[@]}"; do',
        '  [[ $rladapt_node == "$rladapt_head" ]] && continue',
        f'  {_srun(opts, *_RAY_STEP)} -w "$rladapt_node" \\',
        '    ray start --address="$RAY_ADDRESS" --block --num-cpus="$rladapt_ray_cpus" \\',
        f'    --temp-dir="$rladapt_ray_tmp" {start} &',
        "  rladapt_ray_pids+=($!)",
        "done",
        _RAY_NODES,
        f"rladapt_deadline=$((SECONDS + {wait}))",
        "until (($(rladapt_ray_nodes) >= SLURM_JOB_NUM_NODES)); do",
        '  for rladapt_pid in "${rladapt_ray_pids[@]}"; do',
        '    if ! kill -0 "$rladapt_pid" 2>/dev/null; then',
        '      echo "rladapt: a Ray node exited while starting" >&2',
        "      exit 1",
        "    fi",
        "  done",
        "  if ((SECONDS >= rladapt_deadline)); then",
        f'    echo "rladapt: the Ray cluster did not reach $SLURM_JOB_NUM_NODES node(s) in {wait} s" >&2',
        "    exit 1",
        "  fi",
        "  sleep 2",
        "done",
        'echo "rladapt: Ray cluster up: $SLURM_JOB_NUM_NODES node(s) at $RAY_ADDRESS"',
    ]


def _driver_lines(native: NativeLaunch, opts: ScriptOptions, command: Command) -> list[str]:
    restarts = int(native.lifecycle.get("max_restarts") or 0)
    pad = "  " if restarts > 0 else ""
    # The batch shell already runs on the head node, so by default the driver is its child: its output reaches
    # the file unchanged (srun's I/O forwarding splits lines longer than 1 KiB and interleaves its own
    # messages). An srun step is for sites whose steps need srun_args, e.g. a container.
    prefix = ""
    if opts.driver_srun:
        prefix = _srun(opts, "--overlap", "--nodes=1", "--ntasks=1") + ' -w "$SLURMD_NODENAME" '
    # The bootstrap on one line, then one native word per line: easy to compare with the native argv.
    words = list(command.argv)
    cut = words.index("--") + 1
    driver = f" \\\n{pad}  ".join([prefix + shlex.join(words[:cut]), *(shlex.quote(w) for w in words[cut:])])
    lines = ["", "# --- the driver, on this node, through the patch bootstrap ---"]
    lines += ray_job_config_lines(command)
    if restarts <= 0:
        lines += ["rladapt_rc=0", f"{driver} || rladapt_rc=$?"]
    else:
        # Each start is a fresh bootstrap: it is told which restart it is and how the start before it ended, so
        # that it marks the step that start resumed from bad when it failed to load it (rladapt.bootstrap), as
        # the bootstrap does for the attempts it supervises itself. The first start inherits neither.
        lines += [
            f"unset {RESTART_ENV} {PREVIOUS_EXIT_ENV}",
            "rladapt_attempt=0",
            "while :; do",
            "  rladapt_rc=0",
            f"  {driver} || rladapt_rc=$?",
            f"  ((rladapt_rc != 0 && rladapt_attempt < {restarts})) || break",
            "  rladapt_attempt=$((rladapt_attempt + 1))",
            '  echo "rladapt: the driver exited with $rladapt_rc;" \\',
            f'    "restart $rladapt_attempt of {restarts}" >&2',
            f'  export {RESTART_ENV}="$rladapt_attempt" {PREVIOUS_EXIT_ENV}="$rladapt_rc"',
            "done",
        ]
    lines += ['echo "rladapt: the driver exited with $rladapt_rc"']
    if native.services:
        lines.append(_SERVICES_END)
    lines.append('exit "$rladapt_rc"')
    return lines


#: The folder of the run directory that holds each service role's log (``NAME.log``) and state (``NAME.state``).
SERVICES_DIR = "services"

# Runs one service role as a job step, again after a non-zero exit while the driver runs (restart=on-failure),
# waiting longer after each failure (at most 30 s). Each change of its state is one line in its state file:
# "STATE RESTARTS EXIT_CODE" (SlurmLauncher.services reads the last one). It runs as a background subshell of the
# batch script: SIGTERM (the driver ended, or the batch script's EXIT trap) ends its step (srun ends a step on
# SIGTERM) and records STOPPED. The driver's end is a file ($rladapt_driver_done), which a restart checks first.
# The script runs under `set -e`: every command whose failure is expected (a step already gone) says `|| :`.
_SERVICE = r"""rladapt_service() {
  local name=$1 restart=$2 dir=$3 n=0 rc=0 pid=
  shift 3
  local log="$dir/$name.log" state="$dir/$name.state"
  trap 'kill -TERM "$pid" 2>/dev/null || :; wait "$pid" 2>/dev/null || :; echo "STOPPED $n 143" >> "$state"; exit 143' TERM
  while :; do
    echo "RUNNING $n -" >> "$state"
    "$@" >> "$log" 2>&1 &
    pid=$!
    rc=0
    wait "$pid" || rc=$?
    if ((rc == 0)); then echo "SUCCEEDED $n 0" >> "$state"; exit 0; fi
    if [[ $restart != on-failure || -e $rladapt_driver_done ]]; then echo "FAILED $n $rc" >> "$state"; exit "$rc"; fi
    n=$((n + 1))
    echo "rladapt: service $name exited with $rc; restart $n" >> "$log"
    echo "PENDING $n $rc" >> "$state"
    sleep "$((n < 5 ? 1 << n : 30))" & pid=$!
    wait "$pid" || true
  done
}"""


def _service_lines(native: NativeLaunch, opts: ScriptOptions) -> list[str]:
    """Each service role as a background job step beside the driver, started before it (``rladapt_service``)."""
    if not native.services:
        return []
    lines = [
        "",
        "# --- service roles: each a job step beside the driver (log and state in the run's services/) ---",
        'rladapt_services_dir="${rladapt_exit_file%/*}/' + SERVICES_DIR + '"',
        'rladapt_driver_done="$rladapt_services_dir/driver-done-$SLURM_JOB_ID"',
        'mkdir -p -- "$rladapt_services_dir"',
        _SERVICE,
    ]
    for role in native.services:
        step = [
            "--overlap",
            "--nodes=1",
            "--ntasks=1",
            f"--cpus-per-task={role.cpus}",
            f"--job-name={role.name}",
        ]
        if role.memory is not None:
            size = size_bytes(role.memory)
            if size is None:
                raise UsageError(
                    f"services.{role.name}.memory={role.memory!r}: expected a size such as 4Gi or 512M"
                )
            step.append(f"--mem={slurm_size(size)}")
        if role.gpus:
            step.append(f"--gpus={role.gpus}")
        env = [f"{check_env_name(k, f'services.{role.name}.env')}={v}" for k, v in role.env.items()]
        words = [*(["env", *env] if env else []), "srun", *opts.srun_args, *step]
        loop = shlex.join(["rladapt_service", role.name, role.restart])
        lines += [
            f'rm -f -- "$rladapt_services_dir/{role.name}.state"',
            f'{loop} "$rladapt_services_dir" {shlex.join(words)} -w "$SLURMD_NODENAME" \\',
            f"  {shlex.join(role.argv)} &",
            f"rladapt_service_pids+=($!){'' if role.outlives_job else ' rladapt_service_stop+=($!)'}",
        ]
    return lines


# What the driver's end does to the service roles: those that do not outlive the job are stopped, the others
# waited for (the job, and with it the allocation, lasts until they end; `rladapt stop` cancels it).
_SERVICES_END = r"""touch -- "$rladapt_driver_done"
if ((${#rladapt_service_stop[@]})); then
  kill -TERM "${rladapt_service_stop[@]}" 2>/dev/null || true
  wait "${rladapt_service_stop[@]}" 2>/dev/null || true
fi
if ((${#rladapt_service_pids[@]})); then
  echo "rladapt: waiting for the services that outlive the job" >&2
  wait "${rladapt_service_pids[@]}" 2>/dev/null || true
fi"""

# The EXIT trap's part for the service roles (scancel, the time limit, a failure before the driver).
_SERVICES_TRAP = r"""  if ((${#rladapt_service_pids[@]})); then
    kill -TERM "${rladapt_service_pids[@]}" 2>/dev/null || true
    wait "${rladapt_service_pids[@]}" 2>/dev/null || true
  fi
"""


def render_script(native: NativeLaunch, opts: ScriptOptions, command: Command) -> str:
    """The sbatch script that runs ``command`` for ``native``; pure, and safe for any value the spec can hold."""
    lines = [
        "#!/usr/bin/env bash",
        *_sbatch_lines(native, opts),
        f"# rladapt slurm launch: {json.dumps(native.job_name)} on {json.dumps(native.framework)} "
        f"{json.dumps(native.version)}; submit with: sbatch --chdir=RUN_DIR {SCRIPT}",
        *(f"# {note}" for note in opts.notes),
        "set -euo pipefail",
        ': "${SLURM_JOB_ID:?run this script with sbatch}"',
        f'rladapt_exit_file="$PWD/slurm-$SLURM_JOB_ID{EXIT_SUFFIX}"',
        _trap(native),
        # The job starts in the run directory: a stop asked for while rladapt was still submitting (the submitter
        # then died before it could scancel) keeps the job from starting, whenever it leaves the queue.
        f'if [ -e {STOP_REQUEST_FILE} ]; then echo "rladapt: stopped before it started" >&2; exit 143; fi',
        # Each start of the driver (a restart, a requeue) appends the step it resumed from here (rladapt.resume).
        'export RLADAPT_ATTEMPTS="$PWD/attempts.jsonl"',
        'cd -- "$SLURM_SUBMIT_DIR"',
        f"cd -- {quote_path(native.working_dir)}",
        # The working directory is importable in every process of the job, Ray workers included (the ray
        # launcher's runtime_env working_dir does the same): patch hooks and reward functions may live there.
        'export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"',
        'export PYTHONUNBUFFERED="${PYTHONUNBUFFERED:-1}"',
    ]
    if native.image:
        lines.append(
            f"# image {json.dumps(native.image)}: Slurm runs no image by itself; pass your site's container "
            "flags (e.g. pyxis --container-image) with -o srun_args=... -o driver_srun=true"
        )
    lines += [f"export {check_env_name(k, 'env')}={shlex.quote(v)}" for k, v in native.env.items()]
    lines += secret_lines(native, "a Slurm job")
    # Exported before Ray starts: Ray workers inherit the raylet's environment, and worker_setup reads it.
    lines += [f"export {check_env_name(k, 'env')}={shlex.quote(v)}" for k, v in command.env.items()]
    lines += _volume_lines(native)
    lines += file_lines(dict(native.files))
    if opts.ray:
        lines += _ray_lines(native, opts)
    lines += _service_lines(native, opts)
    lines += _driver_lines(native, opts, command)
    return "\n".join(lines) + "\n"


def _trap(native: NativeLaunch) -> str:
    if not native.services:
        return _TRAP
    # the services first: the exit code is recorded before anything else, the Ray steps after them
    anchor = "  if ((${#rladapt_ray_pids[@]})); then\n"
    head, tail = _TRAP.split(anchor, 1)
    return (
        head
        + _SERVICES_TRAP
        + anchor
        + tail.replace(
            "rladapt_ray_pids=()", "rladapt_ray_pids=()\nrladapt_service_pids=()\nrladapt_service_stop=()"
        )
    )
