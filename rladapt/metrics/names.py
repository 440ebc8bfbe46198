"""The neutral metric names: one name per quantity, whatever a framework calls it.

Each adapter maps its framework's logged names to these per version (``MetricMap``); a native metric with no
neutral meaning keeps its own name. A quantity a version does not log is absent, never approximated from another
one. The names belong to the plugin contract (``rladapt.plugins``: a ``MetricMap`` is checked against them) and are
re-exported here for existing imports.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import TYPE_CHECKING

from rladapt.plugins.metrics import BY_NAME, METRICS_DIR, NAMES, NEUTRAL, Neutral

if TYPE_CHECKING:
    from rladapt.primitives import RLJob

__all__ = ["BY_NAME", "METRICS_DIR", "NAMES", "NEUTRAL", "Neutral", "no_such_metric"]


def no_such_metric(name: str, logged: Iterable[str], whose: str) -> str:
    """The message for ``--metric NAME`` that is neither neutral nor logged: what would have been accepted."""
    native = sorted(set(logged) - NAMES)
    return (
        f"--metric {name}: no such metric; expected a neutral name ({', '.join(n.name for n in NEUTRAL)})"
        + (f" or one {whose} logged ({', '.join(native)})" if native else "")
    )


# --- where a rendered launch logs for rladapt to read back (the adapters add it; rladapt.metrics.store reads it) --

#: The origin of the native settings an adapter adds for it (``render --explain`` shows it): the directory rladapt
#: chooses when the launch names no location of its own (a location it names is kept: ``NativeLaunch.metrics_dir``).
READ_BACK = (
    f"rladapt metrics: TensorBoard events in <checkpoint.dir>/{METRICS_DIR}, read back (the launch names no "
    "location of its own)"
)
#: The backend name every adapter adds beside the user's (``spec.logging.backends`` spells it the same).
TENSORBOARD = "tensorboard"


def with_tensorboard(
    backends: list[str], field: str = "spec.logging.backends", kept: str | None = None
) -> tuple[list[str], str]:
    """``backends`` with TensorBoard added when the user did not list it, and the origin to record; ``kept``: the
    launch's own location of the events (then named instead of rladapt's directory)."""
    if TENSORBOARD in backends:
        return list(backends), field
    where = (
        READ_BACK
        if kept is None
        else f"rladapt metrics: TensorBoard events under {kept} (the launch's own), read back"
    )
    return [*backends, TENSORBOARD], f"{where}, beside {field}"


def metrics_dir(checkpoint_dir: str) -> str:
    """The metrics directory of a launch whose checkpoint directory is ``checkpoint_dir`` (as the spec gives it)."""
    return posixpath.join(checkpoint_dir, METRICS_DIR)


def kept_log_dir(job: RLJob, native: str | None) -> str | None:
    """The log folder the launch names: ``native``, a native item's (it comes last on the command line, so it
    wins; the launch's own in specs imported before ``spec.logging.dir``), else ``spec.logging.dir``; None:
    rladapt's own (``metrics_dir``)."""
    return native or job.spec.logging.dir


def log_dir_setting(job: RLJob, native: str | None, own_origin: str = READ_BACK) -> tuple[str, str] | None:
    """The value and origin an adapter renders its log-folder setting with: None when a native item names it
    (the item sets it), else ``spec.logging.dir``, else rladapt's own under the checkpoint directory."""
    if native is not None:
        return None
    if job.spec.logging.dir is not None:
        return job.spec.logging.dir, "spec.logging.dir"
    return metrics_dir(job.checkpoint_dir), own_origin
