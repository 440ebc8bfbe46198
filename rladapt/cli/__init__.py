"""The ``rladapt`` command line. Verbs live in small modules; this one holds the group and the error policy.

Exit codes: 0 ok, 2 spec or usage error, 1 anything else. Messages go to stderr; a traceback only with
--debug, which also traces every plugin hook call to stderr (as ``RLADAPT_TRACE_PLUGINS=1`` does).
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

import click

from rladapt import __version__
from rladapt.primitives.errors import RladaptError

from . import compat as _compat
from . import inspect as _inspect
from . import migrate as _migrate
from . import runs as _runs
from . import spec as _spec
from . import upgrade as _upgrade


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, "--version", prog_name="rladapt")
@click.option(
    "--debug", is_flag=True, help="Show a traceback on errors and trace plugin hook calls on stderr."
)
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """One RL post-training job spec, launched on verl, OpenRLHF or NeMo-RL.

    \b
    rladapt validate job.yaml spec.training.global_batch=128
    rladapt render --framework verl==0.9.1 job.yaml
    rladapt launch --framework openrlhf job.yaml --dry-run
    """
    ctx.obj = {"debug": debug}
    if debug:
        from rladapt.plugins._manager import trace_hooks

        trace_hooks()


_spec.register(cli)
_inspect.register(cli)
_compat.register(cli)
_runs.register(cli)
_migrate.register(cli)
_upgrade.register(cli)


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
            traceback.print_exc()
        click.echo(f"error: {exc.message}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(1)
    except Exception as exc:
        if debug:
            traceback.print_exc()
        hint = "" if debug else " (rerun with --debug for a traceback)"
        click.echo(f"internal error: {type(exc).__name__}: {exc}{hint}", err=True)
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
