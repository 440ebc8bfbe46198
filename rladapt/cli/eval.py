"""``rladapt eval RUN``: evaluate a run's versions on demand (a backfill, a new suite on old versions).

It runs the evaluator (``rladapt.evaluate``) here, once: the suites come from the run's spec as it is now (so a
suite added to the spec since the launch can be run on the versions the run already published), the versions
from the run's pool or checkpoint directory, and the results go where the evaluator role writes them, read back by
``rladapt metrics``. A (version, suite) that already has a result is not evaluated again unless ``--force``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rladapt.primitives.errors import UsageError

from .options import format_option, run_argument
from .output import dump_json

if TYPE_CHECKING:
    from rladapt.evaluate import EvalSettings, Target
    from rladapt.runs import Run


def register(cli: click.Group) -> None:
    cli.add_command(eval_)


@click.command("eval", short_help="Evaluate a run's versions on its suites, now.")
@run_argument()
@click.option("--suite", "suites", multiple=True, metavar="NAME", help="Only this suite (repeatable).")
@click.option(
    "--version", "version", metavar="V", help="Only this version: v00000003, 3, an alias, or step-N."
)
@click.option("--step", type=int, metavar="N", help="Only the version of training step N.")
@click.option("--force", is_flag=True, help="Evaluate again what already has a result (replacing it).")
@format_option("text", "json")
def eval_(
    run_id: str, suites: tuple[str, ...], version: str | None, step: int | None, force: bool, fmt: str
) -> None:
    """Evaluate RUN's versions (an id or unique prefix) on the suites of its spec.eval.continuous.

    Exit 2 for a run, suite, version or step that does not exist, 1 when the pool or the weights cannot be read.
    """
    from rladapt.evaluate import Evaluator
    from rladapt.launch import Runner

    if version is not None and step is not None:
        raise UsageError("--version and --step each choose the version: give one of them")
    run = Runner().get(run_id)
    evaluator = Evaluator(_settings(run), run_id=run.id, say=lambda line: click.echo(line, err=True))
    targets = evaluator.targets()
    if not targets:
        raise UsageError(f"run {run.id} has no version to evaluate yet ({_where(evaluator.settings)})")
    chosen = _choose(evaluator, targets, version, step)
    made = evaluator.run_pass(suites=suites or None, select=lambda t: t.version in chosen, force=force)
    if fmt == "json":
        doc: list[dict[str, Any]] = [{k: v for k, v in r.to_json().items() if k != "samples"} for r in made]
        click.echo(dump_json(doc, what="the results"))
        return
    if not made:
        click.echo(
            "nothing to evaluate: every chosen version has a result for every suite (--force to measure again)"
        )
    for result in made:
        click.echo(f"{result.version} (step {result.step}) {result.suite}: score {result.score:.4f}")


def _settings(run: Run) -> EvalSettings:
    """The run's evaluation settings from its spec as it is now; from what its evaluator last ran with when the
    spec file is gone or has no suites."""
    from rladapt.evaluate import EvalSettings
    from rladapt.evaluate.worker import evaluator_of_run
    from rladapt.primitives import load_job

    record = run.record
    root = str(record.checkpoint_root())
    spec_path = record.spec_path
    if spec_path and Path(spec_path).is_file():
        job = load_job(spec_path, list(record.overrides))
        settings = EvalSettings.from_job(job, framework=record.framework, version=record.version)
        if settings is not None:
            # the suite files as the job named them, relative to its working directory (seen from here)
            base = Path(job.spec.runtime.working_dir)
            suites = [
                suite.model_copy(update={"data": [str(_here(p, base)) for p in suite.data],
                                         "scorer": _scorer_here(suite.scorer, base)})
                for suite in settings.continuous.suites
            ]  # fmt: skip
            continuous = settings.continuous.model_copy(update={"suites": suites})
            return dataclasses.replace(settings, continuous=continuous, checkpoint_dir=root, run_id=run.id)
    last = evaluator_of_run(run)
    if last is not None:
        return last.settings
    raise UsageError(
        f"run {run.id} has no spec.eval.continuous (its spec {spec_path!r}) and no evaluator ran for it: "
        "add the suites to the spec's eval.continuous, then run rladapt eval again"
    )


def _here(path: str, base: Path) -> Path:
    from rladapt.primitives.paths import resolve

    return resolve(path, base)


def _scorer_here(scorer: Any, base: Path) -> Any:
    if scorer.function is None:
        return scorer
    return scorer.model_copy(
        update={
            "function": scorer.function.model_copy(update={"path": str(_here(scorer.function.path, base))})
        }
    )


def _choose(evaluator: Any, targets: list[Target], version: str | None, step: int | None) -> set[str]:
    names = [t.version for t in targets]
    if step is not None:
        found = {t.version for t in targets if t.step == step}
        if not found:
            steps = ", ".join(str(t.step) for t in targets)
            raise UsageError(f"--step {step}: the run has no version of that step (steps: {steps})")
        return found
    if version is None:
        return set(names)
    wanted = version
    if evaluator.store is not None and not version.startswith("step-"):
        wanted = evaluator.store.resolve(version)  # a number or an alias; a UsageError naming what exists
    if wanted not in names:
        raise UsageError(f"--version {version}: not a version of this run (its versions: {', '.join(names)})")
    return {wanted}


def _where(settings: EvalSettings) -> str:
    if settings.continuous.follow == "pool":
        return f"it published nothing to the pool at {settings.store!r}"
    return f"no complete checkpoint with weights in {settings.checkpoint_dir!r}"
