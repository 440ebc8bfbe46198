"""The ``rladapt`` command line. Verbs live in small modules; this one holds the group and the error policy.

Exit codes: 0 ok, 2 spec or usage error, 1 anything else. Messages go to stderr; a traceback only with
--debug, which also traces every plugin hook call to stderr (as ``RLADAPT_TRACE_PLUGINS=1`` does).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from rladapt import __version__
from rladapt.primitives.errors import RladaptError

#: ``rladapt --help`` in sections, in this order: section -> verb -> the module of this package that defines it
#: (its ``register(cli)`` adds the module's verbs). A verb's section says what it is for, so a user finds the
#: handful they need without reading all of them; a verb belongs to exactly one section.
SECTIONS: dict[str, dict[str, str]] = {
    "Spec (write and check a job spec)": {
        "validate": "spec",
        "render": "spec",
        "schema": "spec",
        "plugins": "inspect",
    },
    "Runs (launch a job and follow it)": {
        "launch": "runs",
        "status": "runs",
        "logs": "runs",
        "watch": "watch",
        "stop": "runs",
        "runs": "runs",
        "checkpoints": "checkpoints",
        "resume": "checkpoints",
        "certify": "certify",
    },
    "Results (read what a run logged)": {
        "metrics": "metrics",
        "compare": "compare",
        "eval": "eval",
        "triage": "triage",
    },
    "Pool (versioned weights for serving and evaluation)": {
        "pool": "pool",
    },
    "Migration (from a native launch, to another framework version)": {
        "import": "migrate",
        "diff": "migrate",
        "upgrade": "upgrade",
    },
    "Environment (pin a framework version in your repository)": {
        "pin": "compat",
        "check": "compat",
    },
    "Maintainers (the compatibility matrix and its snapshots)": {
        "matrix": "compat",
    },
}

#: Verb -> its module. A verb's module is imported only when that verb runs, or when help lists every verb:
#: ``render`` does not pay for the run store, the launchers' verbs or the matrix tools (start-up time,
#: benchmarks/bench_render_snapshot.py). A module may also register eagerly (``_module.register(cli)`` below
#: the group); both ways work, and help lists a verb no section names under "Other commands".
LAZY_VERBS: dict[str, str] = {verb: module for verbs in SECTIONS.values() for verb, module in verbs.items()}


class _LazyGroup(click.Group):
    """A group whose verbs are imported on first use (``LAZY_VERBS``)."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            if cmd_name in LAZY_VERBS:
                self._load(LAZY_VERBS[cmd_name])
            else:  # a typo: click's "Did you mean" picks from the loaded verbs, so load them all
                self.list_commands(ctx)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        for module in sorted(set(LAZY_VERBS.values())):
            self._load(module)
        return super().list_commands(ctx)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The verbs in their ``SECTIONS``, in the table's order; a verb no section names under "Other commands"."""
        commands: dict[str, click.Command] = {}
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:  # hidden: kept working, not advertised
                commands[name] = command
        if not commands:
            return
        width = max(len(name) for name in commands)
        limit = formatter.width - 6 - width
        sections = [*SECTIONS.items(), ("Other commands", sorted(set(commands) - set(LAZY_VERBS)))]
        for title, verbs in sections:
            # padded to the longest verb of all: the help columns line up across the sections
            rows = [
                (name.ljust(width), commands[name].get_short_help_str(limit))
                for name in verbs
                if name in commands
            ]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def _load(self, module: str) -> None:
        loaded = importlib.import_module(f"{__name__}.{module}")
        if not all(name in self.commands for name, owner in LAZY_VERBS.items() if owner == module):
            loaded.register(self)


@click.group(
    cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110}
)
@click.version_option(__version__, "--version", prog_name="rladapt")
@click.option(
    "--debug", is_flag=True, help="Show a traceback on errors and trace plugin hook calls on stderr."
)
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """One RL post-training job spec, launched on verl, OpenRLHF, NeMo-RL or TRL.

    \b
    rladapt validate job.yaml spec.training.global_batch=128
    rladapt render --framework verl==0.9.1 job.yaml
    rladapt launch --framework openrlhf job.yaml --dry-run
    """
    ctx.obj = {"debug": debug}
    if debug:
        from rladapt.plugins import trace_hooks

        trace_hooks()


def main(argv: list[str] | None = None) -> Any:
    args = sys.argv[1:] if argv is None else argv
    debug = "--debug" in args
    try:
        return cli.main(args=args, prog_name="rladapt", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except RladaptError as exc:
        if debug:
            _print_traceback()
        click.echo(f"error: {exc.message}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(1)
    except Exception as exc:
        if debug:
            _print_traceback()
        hint = "" if debug else " (rerun with --debug for a traceback)"
        click.echo(f"internal error: {type(exc).__name__}: {exc}{hint}", err=True)
        sys.exit(1)


def _print_traceback() -> None:
    import traceback  # only with --debug: it pulls in linecache, tokenize and textwrap at every start otherwise

    traceback.print_exc()


if __name__ == "__main__":  # pragma: no cover
    main()
