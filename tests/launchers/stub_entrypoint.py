"""Stands in for the framework's entrypoint (``python3 -m verl.trainer.main_ppo``), which needs GPUs.

It receives the real adapter's argv and environment and reports them as one JSON line, so the tests can check
that everything arrived byte for byte. Driven by the job's environment (set through the spec's ``env``):
``STUB_EXIT`` (exit code), ``STUB_SLEEP`` (seconds, with a child process in the same group), ``STUB_RAY_TASK``
(run one Ray task and report what the worker saw). ``$STUB_SECRET`` is reported as a SHA-256 only, so a test can
check that a secret arrived while the job's logs (readable from Ray's dashboard) never hold it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

PROBE_FILE = os.path.join("rladapt-probe", "config.yaml")


def secret_sha256() -> str | None:
    value = os.environ.get("STUB_SECRET")
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()


def ray_worker_report() -> dict[str, object]:
    import ray

    ray.init(logging_level=logging.ERROR)

    @ray.remote(num_cpus=0)
    def probe() -> dict[str, object]:
        return {
            "patched": getattr(sys, "rladapt_test_patched", None),
            "patch_list": os.environ.get("RLADAPT_RUNTIME_PATCHES"),
            "hostile": os.environ.get("HOSTILE"),
            "secret_sha256": secret_sha256(),
            "pid": os.getpid(),
        }

    try:
        seen: dict[str, object] = ray.get(probe.remote())
        return seen
    finally:
        ray.shutdown()


def main() -> None:
    report: dict[str, object] = {
        "argv": sys.argv[1:],
        "hostile": os.environ.get("HOSTILE"),
        "api_key": os.environ.get("API_KEY"),
        "file_key": os.environ.get("FILE_KEY"),
        "secret_sha256": secret_sha256(),
        "patched_in_process": getattr(sys, "rladapt_test_patched", None),
        "probe_file": Path(PROBE_FILE).read_text() if os.path.exists(PROBE_FILE) else None,
        "pwned_in_cwd": os.path.exists("pwned"),
        "pid": os.getpid(),
        "pgid": os.getpgid(0),
    }
    if os.environ.get("STUB_RAY_TASK"):
        report["worker"] = ray_worker_report()
    print("STUB-REPORT " + json.dumps(report, sort_keys=True), flush=True)
    seconds = float(os.environ.get("STUB_SLEEP") or 0)
    if seconds:
        child = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
        print(f"STUB-CHILD {child.pid}", flush=True)
        time.sleep(seconds)
    code = int(os.environ.get("STUB_EXIT") or 0)
    print(f"STUB-EXIT {code}", flush=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
