"""What a resume can and cannot honour, and what a run leaves behind to tell whether it resumed right.

``Restored``: a spec field whose value a resume takes from the checkpoint rather than from the spec
(``FrameworkAdapter.resume_restores``): ``rladapt resume`` refuses a run whose spec changed one of them, since the
run record would show a value the job never uses. ``ResumeTrace``: what a finished run logged per step (its
metrics and the samples it consumed) and a hash of its final weights (``FrameworkAdapter.resume_trace``), which
``rladapt certify`` compares between an uninterrupted run and runs killed and resumed.

.. versionadded:: 0.4
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Restored:
    """A spec field a resume takes from the checkpoint: a change to it since the launch does not apply."""

    #: the spec field, dotted (``spec.training.optimizer.lr``)
    field: str
    #: why the checkpoint wins, for people: what the framework's load restores
    why: str
    #: the framework's load code that restores it (file, function, versions read)
    source: str


@dataclass(frozen=True)
class ResumeTrace:
    """What one finished run logged, step by step, read back from its own files.

    A step redone after a resume counts once, as redone (the last start that logged it).
    """

    #: step -> neutral metric name -> value
    metrics: dict[int, dict[str, float | None]] = field(default_factory=dict)
    #: step -> the samples (prompt hashes) the step consumed, in order
    samples: dict[int, tuple[str, ...]] = field(default_factory=dict)
    #: a hash of the final weights (None: no final weights found), and the file(s) it covers
    weights: str | None = None
    weights_from: str | None = None
    notes: tuple[str, ...] = ()
