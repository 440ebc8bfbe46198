"""Options and arguments shared by several verbs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click
from click.core import ParameterSource

from rladapt.plugins.launcher import RUN_ID_OPTION
from rladapt.primitives.errors import UsageError

if TYPE_CHECKING:
    from rladapt.pipeline import Rendered
    from rladapt.plugins import Registry

F = TypeVar("F", bound=Callable[..., Any])


def spec_argument(func: F) -> F:
    """SPEC and trailing Hydra-style overrides (``spec.training.global_batch=128``)."""
    func = click.argument("overrides", nargs=-1, metavar="[OVERRIDES]...")(func)
    return click.argument("spec", type=click.Path(dir_okay=False))(func)


def run_argument(required: bool = True) -> Callable[[F], F]:
    """``RUN`` (into ``run_id``): a run id or a unique prefix of one; when not required, None (the latest run)."""
    return click.argument("run_id", metavar="RUN" if required else "[RUN]", required=required)


def format_option(
    *choices: str, json_alias: bool = False, help: str = "How to print the result."
) -> Callable[[F], F]:
    """``--format CHOICE`` (into ``fmt``; the first choice is the default): the one output option of every verb
    that prints data.

    ``json_alias``: also the hidden ``--json`` flag, the same as ``--format json``, of the verbs that said
    ``--json`` before they had ``--format`` (``status``, ``runs``): scripts written against them keep working.
    """

    def decorate(func: F) -> F:
        if json_alias:
            func = _json_alias(func)
        return click.option(
            "--format",
            "fmt",
            type=click.Choice(choices),
            default=choices[0],
            show_default=True,
            help=help,
        )(func)

    return decorate


def _json_alias(func: F) -> F:
    @functools.wraps(func)
    def command(*args: Any, as_json: bool, **kwargs: Any) -> Any:
        if as_json:
            ctx = click.get_current_context()
            given = ctx.get_parameter_source("fmt") is ParameterSource.COMMANDLINE
            if given and kwargs["fmt"] != "json":
                raise UsageError(f"--json is --format json: it contradicts --format {kwargs['fmt']}")
            kwargs["fmt"] = "json"
        return func(*args, **kwargs)

    # functools.wraps carried the decorators below over (click's __click_params__): this adds to them
    return cast(
        F,
        click.option("--json", "as_json", is_flag=True, hidden=True, help="The same as --format json.")(
            command
        ),
    )


def framework_option(required: bool = True) -> Callable[[F], F]:
    return click.option(
        "--framework",
        "-f",
        required=required,
        metavar="NAME[==VERSION]",
        help="Framework adapter, optionally pinned: verl, verl==0.9.1, openrlhf==0.11.2.",
    )


def launcher_options(func: F) -> F:
    func = click.option(
        "--launcher-opt",
        "-o",
        "launcher_opts",
        multiple=True,
        metavar="KEY=VALUE",
        help="Launcher option (repeatable), e.g. -o partition=gpu -o address=http://head:8265.",
    )(func)
    return func


def metric_option(help: str) -> Callable[[F], F]:
    """``--metric/-m NAME`` (repeatable, into ``wanted``) of the verbs that read a run's metrics."""
    return click.option("--metric", "-m", "wanted", multiple=True, metavar="NAME", help=help)


def polling_options(what: str) -> Callable[[F], F]:
    """``--interval`` and ``--timeout`` of a verb that polls a run until it ends; ``what`` says what is read."""

    def text(rest: str) -> str:
        said = what + rest
        return said[:1].upper() + said[1:]

    def decorate(func: F) -> F:
        func = click.option(
            "--timeout",
            type=click.FloatRange(min=0),
            default=None,
            help=text("give up (exit 1) after this many seconds; the run goes on."),
        )(func)
        return click.option(
            "--interval",
            type=click.FloatRange(min=0.05),
            default=5.0,
            show_default=True,
            help=text("seconds between two reads."),
        )(func)

    return decorate


def parse_launcher_opts(items: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--launcher-opt {item!r}: expected KEY=VALUE")
        if key.strip() == RUN_ID_OPTION:
            raise UsageError(
                f"--launcher-opt {item!r}: {RUN_ID_OPTION} is set by rladapt launch, not by hand"
            )
        out[key.strip()] = value
    return out


def render_spec(spec: str, overrides: tuple[str, ...], framework: str, registry: Registry) -> Rendered:
    """The pipeline's ``render_spec``, imported when a verb needs it (render never loads the runner or run store)."""
    from rladapt.pipeline import render_spec as render

    return render(spec, overrides, framework, registry)
