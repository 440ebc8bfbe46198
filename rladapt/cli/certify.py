"""``certify``: does a job resume right? It runs the job uninterrupted, then twice more killed with SIGKILL (once a
checkpoint is complete, and at a random moment) and resumed, and compares each step's metrics, the samples each
step consumed and the final weights (``rladapt.certify``). Exit 0 when certified, 1 when a check failed.

A verb of its own, not ``resume --certify``: ``resume`` acts on a recorded run, a certificate starts from a spec
and makes three runs of its own.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from .options import format_option, framework_option, spec_argument
from .output import dump_json


def register(cli: click.Group) -> None:
    cli.add_command(certify)


@click.command(
    short_help="Certify that a job resumes right: killed and resumed, it matches a run never killed."
)
@framework_option()
@spec_argument
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the three runs keep their checkpoints (default: a new temporary directory, kept).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random moment of a kill.")
@click.option(
    "--rtol",
    type=float,
    default=0.0,
    show_default=True,
    help="Relative tolerance of a per-step metric (0: equal to the bit).",
)
@click.option(
    "--timeout", type=float, default=3600.0, show_default=True, help="Seconds each run may take at most."
)
@format_option("text", "json")
def certify(
    framework: str,
    spec: str,
    overrides: tuple[str, ...],
    workdir: Path | None,
    seed: int,
    rtol: float,
    timeout: float,
    fmt: str,
) -> None:
    """Run SPEC (with OVERRIDES) on FRAMEWORK uninterrupted, then killed and resumed twice, and print whether the
    resumed runs logged the same steps, metrics and samples and ended with the same weights (on the local
    launcher; TRL on the CPU)."""
    from rladapt.certify import Options
    from rladapt.certify import certify as run_certificate

    where = workdir if workdir is not None else Path(tempfile.mkdtemp(prefix="rladapt-certify-"))
    options = Options(workdir=where.absolute(), seed=seed, timeout=timeout, rtol=rtol)
    result = run_certificate(spec, overrides, framework, options, say=lambda line: click.echo(line, err=True))
    if fmt == "json":
        click.echo(dump_json(result.to_json(), what="the certificate"))
    else:
        click.echo(result.text())
    if not result.certified:
        raise SystemExit(1)
