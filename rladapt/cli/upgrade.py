"""``rladapt upgrade``: what moving one spec from one framework version to another changes in its launch."""

from __future__ import annotations

import sys

import click

from .options import format_option, spec_argument


def register(cli: click.Group) -> None:
    cli.add_command(upgrade)


@click.command(short_help="Show what another framework version changes.")
@spec_argument
@click.option(
    "--framework", "-f", required=True, metavar="NAME", help="The framework: verl, openrlhf, nemo-rl."
)
@click.option("--from", "old", required=True, metavar="VERSION", help="The version the spec runs on now.")
@click.option("--to", "new", required=True, metavar="VERSION", help="The version to move to.")
@format_option("text", "json")
def upgrade(spec: str, overrides: tuple[str, ...], framework: str, old: str, new: str, fmt: str) -> None:
    """Render SPEC on two versions of FRAMEWORK and show what changes: native keys renamed, removed, added,
    values changed, patches gained or dropped, capabilities lost.

    Exit 0 when the spec translates on both versions, 2 (with the reasons) when it does not.
    """
    from rladapt.cli.output import dump_json
    from rladapt.compat.upgrade import compare
    from rladapt.plugins import get_registry

    report = compare(spec, overrides, framework, old, new, get_registry())
    if fmt == "json":
        click.echo(dump_json(report.to_json(), what="the upgrade report"))
    else:
        click.echo(report.to_text(), nl=False)
    if not report.ok:
        sys.exit(2)
