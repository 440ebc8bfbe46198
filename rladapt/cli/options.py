"""Options and arguments shared by several verbs."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

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
