"""Verbs about the spec itself: validate, schema, render."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from typing import Any, TypeVar

import click

from .options import (
    format_option,
    framework_option,
    launcher_options,
    parse_launcher_opts,
    render_spec,
    spec_argument,
)
from .output import dump_json

F = TypeVar("F", bound=Callable[..., Any])


def deep_check_option(func: F) -> F:
    """``--deep-check``: also run the framework's own schema where it is installed (slower; see README)."""

    def enable(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        if value:  # the pipeline reads it wherever the render happens (render_spec, launch)
            from rladapt.pipeline import DEEP_CHECK_ENV

            os.environ[DEEP_CHECK_ENV] = "1"
        return value

    return click.option(
        "--deep-check",
        is_flag=True,
        expose_value=False,
        callback=enable,
        help="Besides the offline schema-snapshot check, compose the config with the installed framework's own "
        "schema (Hydra for verl, the real parser for OpenRLHF); a note says when it is not installed.",
    )(func)


def register(cli: click.Group) -> None:
    cli.add_command(validate)
    cli.add_command(schema)
    cli.add_command(render)


@click.command(short_help="Check a spec: every field problem at once.")
@spec_argument
@click.option(
    "--framework",
    "-f",
    "frameworks",
    multiple=True,
    metavar="NAME[==VERSION]",
    help="Also check that the spec translates for this framework (repeatable).",
)
@click.option(
    "--no-path-check",
    "path_check",
    flag_value=False,
    default=True,
    help="Do not check that the local files the job reads exist here (for a spec whose files exist only where "
    "it runs).",
)
@deep_check_option
def validate(spec: str, overrides: tuple[str, ...], frameworks: tuple[str, ...], path_check: bool) -> None:
    """Check SPEC (with OVERRIDES): every field problem together, then every cross-field one.

    Then the local files the job reads (interpreter, config, model, data, reward, agent, tool and evaluation
    files; Hugging Face ids and URLs excepted) must exist, relative ones in spec.runtime.working_dir seen from the
    current directory.
    With --framework (repeatable), also translate it for each framework, so one job.yaml is known to run on all.
    """
    from pathlib import Path

    from rladapt.pipeline import render_native
    from rladapt.plugins import get_registry
    from rladapt.primitives import SpecError, job_inputs, load_job, missing_inputs
    from rladapt.primitives.paths import resolve

    job = load_job(spec, list(overrides))
    if path_check:
        base = resolve(job.spec.runtime.working_dir, Path.cwd())
        missing = missing_inputs(job_inputs(job, base), base)
        if missing:
            raise SpecError(missing, f"{spec}: files the job reads are missing (--no-path-check skips this)")
    pools = ", ".join(
        f"{p.name} {p.nodes}x{p.gpus_per_node} [{' '.join(p.roles)}]" for p in job.placement.pools
    )
    click.echo(
        f"{spec}: valid RLJob {job.name!r} ({job.spec.algorithm.name}, {job.total_gpus} GPUs: {pools})"
    )
    failed: list[SpecError] = []
    for framework in frameworks:
        try:
            rendered = render_native(job, framework, get_registry())
        except SpecError as exc:  # every framework is tried; the first failure does not hide the others
            failed.append(type(exc)(exc.problems, f"{spec} on {framework}"))
            continue
        click.echo(f"{spec}: translates for {rendered.native.framework} {rendered.native.version}")
    if len(failed) == 1:
        raise failed[0]
    if failed:
        raise SpecError([p for exc in failed for p in exc.problems], f"{spec} on {', '.join(frameworks)}")


@click.command(short_help="Print the spec's JSON Schema (for editors).")
def schema() -> None:
    """Print the JSON Schema of RLJob (for editors' YAML language servers)."""
    from rladapt.primitives import json_schema_text

    click.echo(json_schema_text())


@click.command(short_help="Print the native launch a spec translates to.")
@framework_option()
@spec_argument
@format_option("text", "json", help="json is the stable NativeLaunch document (see README).")
@click.option("--launcher", "-l", default=None, help="Also render what this launcher would submit.")
@click.option(
    "--explain",
    is_flag=True,
    help="Print every native key with the source of its value: a spec field, an rladapt default (beside the "
    "framework version's own default when they differ), a patch or a spec.native item (flagged when it "
    "overrides a derived key).",
)
@launcher_options
@deep_check_option
def render(
    framework: str,
    spec: str,
    overrides: tuple[str, ...],
    fmt: str,
    launcher: str | None,
    explain: bool,
    launcher_opts: tuple[str, ...],
) -> None:
    """Translate SPEC into FRAMEWORK's native launch and print it (nothing runs)."""
    from rladapt.explain import differing_defaults, explain_render, format_text
    from rladapt.plugins import get_registry
    from rladapt.primitives import UsageError

    if launcher_opts and launcher is None:
        raise UsageError("--launcher-opt needs --launcher: the options belong to a launcher")
    if explain and launcher is not None:
        raise UsageError("--explain explains the framework's native launch: it does not take --launcher")
    registry = get_registry()
    rendered = render_spec(spec, overrides, framework, registry)
    native = rendered.native
    if explain:
        explained = explain_render(rendered)
        if fmt == "json":
            document: dict[str, Any] = {
                "framework": native.framework,
                "version": native.version,
                "job_name": native.job_name,
                "keys": [e.to_dict() for e in explained],
                "notes": list(native.notes),
            }
            if native.services:  # the processes run beside the training job, each on every launcher
                document["services"] = [role.model_dump(mode="json") for role in native.services]
            click.echo(dump_json(document, what="the explanation"))
        else:
            click.echo(format_text(explained, native))
        return
    if launcher is not None:
        from rladapt.plugins.launcher import render_artifacts

        plugin = registry.launcher(launcher)
        artifacts = render_artifacts(
            plugin, native, plugin.merge_options(native, parse_launcher_opts(launcher_opts))
        )
        if fmt == "json":
            document = {
                "native": native.to_dict(),
                "launcher": artifacts.launcher,
                "files": artifacts.files,
                "request": artifacts.request,
                "warnings": artifacts.warnings,
            }
            click.echo(dump_json(document, what="the render"))
        else:
            for warning in artifacts.warnings:  # as `launch` says them (where `launch --strict` refuses)
                click.echo(f"warning: {warning}", err=True)
            click.echo(artifacts.describe(), nl=False)
        return
    if fmt == "json":
        click.echo(dump_json(native.to_dict(), what="the render"))
        return
    # a default that is not the framework's own changes the run: the text render says so, field by field
    notes = differing_defaults(explain_render(rendered), native.framework, native.version)
    click.echo(format_native_text(native.model_copy(update={"notes": (*native.notes, *notes)})))


def format_native_text(native: object) -> str:
    from rladapt.plugins import NativeLaunch

    assert isinstance(native, NativeLaunch)
    lines = [f"# {native.framework} {native.version}: {native.job_name}"]
    lines.append(
        "# placement: "
        + "; ".join(f"{p.name} {p.nodes}x{p.gpus_per_node} [{' '.join(p.roles)}]" for p in native.pools)
    )
    if native.patches:
        lines.append("# patches: " + ", ".join(native.patches))
    if native.runtime_patches:
        lines.append("# runtime patches (run by rladapt.bootstrap): " + ", ".join(native.runtime_patches))
    if native.checkpoint_dir:
        lines.append(
            f"# checkpoints: {native.checkpoint_dir} (resume: {native.resume.mode}"
            + (f" {native.resume.path}" if native.resume.path else "")
            + ")"
        )
    for note in native.notes:
        lines.append(f"# note: {note}")
    for key, value in native.env.items():
        lines.append(f"export {key}={shlex.quote(value)}")
    for secret in native.secrets:
        # Each launcher takes the first source it can read: all of them, in order.
        lines.append(f"# secret {secret.env} <- {', else '.join(s.label for s in secret.sources)}")
    for name, text in native.files.items():
        lines.append(f"# file {name} ({len(text.splitlines())} lines)")
    argv = list(native.argv)
    head, rest = argv[:3], argv[3:]
    if rest:
        # one argument per line, a --flag together with its value
        groups: list[list[str]] = []
        for arg in rest:
            if groups and groups[-1][0].startswith("-") and len(groups[-1]) == 1 and not arg.startswith("-"):
                groups[-1].append(arg)
            else:
                groups.append([arg])
        lines.append(shlex.join(head) + " \\")
        lines.extend(
            f"    {shlex.join(g)}" + (" \\" if i < len(groups) - 1 else "") for i, g in enumerate(groups)
        )
    else:
        lines.append(shlex.join(head))
    # Comment lines carry spec values: a newline in one must not end the comment (the text reads as a script).
    lines = [_one_line(line) if line.startswith("#") else line for line in lines]
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
