"""``rladapt pool``: publish a run's weights as versions, name them with aliases, lease them, collect the rest.

The store is ``--store``, else ``RLADAPT_POOL``. Every verb prints text, or JSON with ``--format json``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from rladapt.primitives.errors import UsageError

from .options import format_option
from .output import dump_json

F = TypeVar("F", bound=Callable[..., Any])


def register(cli: click.Group) -> None:
    cli.add_command(pool)


def _store_option(func: F) -> F:
    return click.option(
        "--store",
        metavar="DIR",
        envvar="RLADAPT_POOL",
        help="The pool's directory (default: $RLADAPT_POOL).",
    )(func)


def _open(store: str | None) -> Any:
    from rladapt.pool import open_store

    if not store:
        raise UsageError("no pool given: pass --store DIR or set RLADAPT_POOL")
    return open_store(store)


def _emit(fmt: str, document: Any, text: str) -> None:
    click.echo(dump_json(document, what="the pool's answer") if fmt == "json" else text)


@click.group(short_help="Versioned weights: publish, alias, lease, collect.")
def pool() -> None:
    """The active model pool: every version an immutable folder of Hugging Face weights with a manifest."""


@pool.command(short_help="Publish a run's checkpoint (or a model folder) as a new version.")
@click.argument("target", metavar="RUN|DIR")
@click.option("--framework", "-f", metavar="NAME==VERSION", help="The framework version that wrote DIR.")
@click.option("--step", type=int, help="The checkpoint step to publish (default: the newest complete one).")
@click.option("--alias", "alias_name", metavar="NAME", help="Point this alias at the published version.")
@_store_option
@format_option("text", "json")
def publish(target: str, framework: str | None, step: int | None, alias_name: str | None, store: str | None,
            fmt: str) -> None:  # fmt: skip
    """Publish RUN's checkpoint (a run id) or DIR (a Hugging Face model folder); prints the version.

    Only a complete checkpoint is published; a second publish of the same run's same step prints the version the
    first one made.
    """
    from rladapt.pool import Source

    pool_store = _open(store)
    path = Path(target)
    if path.is_dir():
        name, version = _split_framework(framework)
        source = Source(framework=name, framework_version=version, checkpoint=str(path.resolve()), step=step)
        folder = path
    elif "/" in target or target.startswith("."):
        raise UsageError(f"no directory {target!r} (and a run id holds no '/')")
    else:
        folder, source = _run_checkpoint(target, step)
    manifest, new = pool_store.publish(folder, source=source)
    if alias_name:
        from rladapt.pool import move_alias

        move_alias(pool_store, alias_name, manifest.version)
    document = {**manifest.to_json(), "new": new, "alias": alias_name}
    verb = "published" if new else "already published as"
    _emit(fmt, document, f"{verb} {manifest.version}" + (f" (alias {alias_name})" if alias_name else ""))


def _split_framework(framework: str | None) -> tuple[str | None, str | None]:
    if framework is None:
        return None, None
    from rladapt.pipeline import parse_framework

    name, version = parse_framework(framework)
    return name, version


def _run_checkpoint(run_id: str, step: int | None) -> tuple[Any, Any]:
    """The model files of a run's complete checkpoint (by its adapter), and where they came from."""
    from rladapt.launch import Runner
    from rladapt.pool import Source

    runner = Runner()
    run = runner.get(run_id)
    record = run.record
    name = record.framework
    adapter = runner.registry.framework(name)
    version = adapter.resolve_version(record.version).version
    root = record.checkpoint_root()
    scan = adapter.scan_checkpoints(root, version)
    if scan is None:
        raise UsageError(f"the {name} adapter does not know how {name} writes checkpoints")
    complete = [ck for ck in scan.checkpoints if ck.complete]
    if step is not None:
        chosen = next((ck for ck in scan.checkpoints if ck.step == step), None)
        if chosen is None or not chosen.complete:
            why = "is not on disk" if chosen is None else f"is not complete: {chosen.reason}"
            steps = ", ".join(str(ck.step) for ck in complete) or "none"
            raise UsageError(f"step {step} of run {run.id} {why} (complete steps: {steps})")
    else:
        if not complete:
            raise UsageError(f"run {run.id} has no complete checkpoint to publish yet")
        chosen = complete[-1]
    files = adapter.weight_files(root, chosen, version)
    if files is None:
        raise UsageError(f"the {name} adapter cannot export weights from its checkpoints")
    source = Source(run_id=run.id, step=chosen.step, framework=name, framework_version=version,
                    spec_hash=record.spec_hash, checkpoint=str(chosen.path))  # fmt: skip
    return files, source


@pool.command(name="list", short_help="List the versions, their sources and aliases.")
@_store_option
@format_option("text", "json")
def list_(store: str | None, fmt: str) -> None:
    """Every version with its run, step and the aliases naming it."""
    from rladapt.pool import DamagedManifest

    pool_store = _open(store)
    aliases: dict[str, list[str]] = {}
    for alias, version in pool_store.aliases().items():
        aliases.setdefault(version, []).append(alias)
    rows = []
    for name in pool_store.versions():
        try:
            manifest = pool_store.manifest(name)
            row = {"version": name, "created": manifest.created, "run_id": manifest.source.run_id,
                   "step": manifest.source.step, "aliases": aliases.get(name, []), "damaged": None}  # fmt: skip
        except DamagedManifest as exc:
            row = {"version": name, "created": None, "run_id": None, "step": None,
                   "aliases": aliases.get(name, []), "damaged": exc.message}  # fmt: skip
        rows.append(row)
    if fmt == "json":
        click.echo(dump_json(rows, what="the pool's versions"))
        return
    if not rows:
        click.echo("no versions")
    for row in rows:
        origin = f"run {row['run_id']} step {row['step']}" if row["run_id"] else "a model folder"
        names = f"  [{', '.join(row['aliases'])}]" if row["aliases"] else ""
        damaged = f"  DAMAGED: {row['damaged']}" if row["damaged"] else ""
        click.echo(f"{row['version']}  {row['created'] or '?'}  {origin}{names}{damaged}")


@pool.command(short_help="Show a version's manifest.")
@click.argument("ref", metavar="VERSION|ALIAS")
@_store_option
@format_option("text", "json")
def show(ref: str, store: str | None, fmt: str) -> None:
    """The manifest of VERSION (v00000003, 3, or an alias)."""
    manifest = _open(store).manifest(ref)
    text = json.dumps(manifest.to_json(), indent=2, sort_keys=True)
    _emit(fmt, manifest.to_json(), text)


@pool.command(short_help="Check a version's files against its manifest.")
@click.argument("ref", metavar="VERSION|ALIAS")
@_store_option
@format_option("text", "json")
def verify(ref: str, store: str | None, fmt: str) -> None:
    """Re-hash every file of VERSION; exit 1 naming each damaged file."""
    pool_store = _open(store)
    version = pool_store.resolve(ref)
    problems = pool_store.verify(version)
    _emit(fmt, {"version": version, "ok": not problems, "problems": problems},
          f"{version}: ok" if not problems else "\n".join(f"{version}: {p}" for p in problems))  # fmt: skip
    if problems:
        raise SystemExit(1)


@pool.command(short_help="Point an alias at a version (atomically; optionally compare-and-swap).")
@click.argument("name")
@click.argument("ref", metavar="VERSION|ALIAS")
@click.option(
    "--if-current", metavar="VERSION", help="Move only if the alias names VERSION now ('none': is unset)."
)
@_store_option
@format_option("text", "json")
def alias(name: str, ref: str, if_current: str | None, store: str | None, fmt: str) -> None:
    """Point NAME at VERSION; exit 1 when --if-current does not hold (someone else moved it first)."""
    from rladapt.pool import move_alias

    state, switched = move_alias(_open(store), name, ref, if_current=if_current, by=os.environ.get("USER"))
    _emit_move(fmt, name, state, switched)


def _emit_move(fmt: str, name: str, state: Any, switched: Any) -> None:
    document = {**state.to_json(), "switch": switched.to_json() if switched else None}
    text = f"{name} -> {state.version}"
    if switched is not None:  # a switch that did not commit everywhere raised SwitchFailed before this
        text += " (every replica switched)"
    _emit(fmt, document, text)


@pool.command(short_help="Point an alias back at what it named before.")
@click.argument("name")
@_store_option
@format_option("text", "json")
def rollback(name: str, store: str | None, fmt: str) -> None:
    """Point NAME at the version it named before its current one."""
    from rladapt.pool import rollback_alias

    state, switched = rollback_alias(_open(store), name, by=os.environ.get("USER"))
    _emit_move(fmt, name, state, switched)


@pool.command(short_help="Keep a version alive for a holder for a while.")
@click.argument("ref", metavar="VERSION|ALIAS")
@click.option("--holder", required=True, help="Who holds the lease (an evaluator, a replica).")
@click.option("--ttl", type=float, required=True, metavar="SECONDS", help="How long the lease lasts.")
@_store_option
@format_option("text", "json")
def lease(ref: str, holder: str, ttl: float, store: str | None, fmt: str) -> None:
    """Lease VERSION to HOLDER for TTL seconds (again to renew); GC keeps a leased version."""
    taken = _open(store).lease(ref, holder, ttl)
    _emit(fmt, taken.to_json(), f"{taken.version} leased by {holder} for {ttl:g} s")


@pool.command(short_help="Give a lease back.")
@click.argument("ref", metavar="VERSION|ALIAS")
@click.option("--holder", required=True, help="Who held the lease.")
@_store_option
@format_option("text", "json")
def release(ref: str, holder: str, store: str | None, fmt: str) -> None:
    """Release HOLDER's lease on VERSION."""
    pool_store = _open(store)
    version = pool_store.resolve(ref)
    held = pool_store.release(version, holder)
    _emit(fmt, {"version": version, "holder": holder, "released": held},
          f"{version}: lease of {holder} released" if held else f"{version}: {holder} held no lease")  # fmt: skip


@pool.command(short_help="Delete the versions nothing keeps.")
@click.option("--keep-last", type=int, required=True, metavar="K", help="Keep the newest K versions.")
@click.option("--keep-every", type=int, metavar="N", help="Also keep every N-th version (v...N, v...2N).")
@click.option("--verify", "full", is_flag=True, help="Re-hash every file (default: sizes only).")
@click.option("--dry-run", is_flag=True, help="Say what would go, change nothing.")
@_store_option
@format_option("text", "json")
def gc(
    keep_last: int, keep_every: int | None, full: bool, dry_run: bool, store: str | None, fmt: str
) -> None:
    """Delete versions that are not among the newest K, aliased, leased or every N-th; quarantine damaged ones."""
    report = _open(store).gc(keep_last=keep_last, keep_every=keep_every, verify=full, dry_run=dry_run)
    would = "would delete" if dry_run else "deleted"
    lines = [f"{would} {name}" for name in report.deleted]
    lines += [f"kept {name}: {', '.join(why)}" for name, why in report.kept.items()]
    moved = "would quarantine" if dry_run else "quarantined"
    lines += [f"{moved} {name}: {why}" for name, why in report.quarantined.items()]
    lines += [f"damaged but kept {name}: {why}" for name, why in report.damaged_kept.items()]
    lines += [f"swept tmp/{name}" for name in report.swept]
    _emit(fmt, report.to_json(), "\n".join(lines) or "nothing to do")


@pool.command(short_help="Serve an alias's version with N replicas that switch together.")
@click.option("--alias", "alias_name", required=True, metavar="NAME", help="The alias the replicas follow.")
@click.option("--replicas", type=int, default=1, show_default=True, help="How many replicas.")
@click.option(
    "--engine",
    type=click.Choice(["reference", "vllm", "sglang"]),
    default="reference",
    show_default=True,
    help="The engine: reference (rladapt's own, transformers on CPU), vllm or sglang (their own servers, a GPU).",
)
@click.option("--port", type=int, help="The first replica's port (the others follow); default: free ports.")
@click.option(
    "--wait",
    is_flag=True,
    help="Wait until the alias names a version before starting (a group beside a run whose gate or publisher "
    "sets the alias later); without it a missing alias is exit 2.",
)
@_store_option
def serve(
    alias_name: str, replicas: int, engine: str, port: int | None, wait: bool, store: str | None
) -> None:
    """Start REPLICAS engines on the version NAME names and follow NAME until interrupted.

    While it runs, `pool alias NAME V` and `pool rollback NAME` switch every replica in two phases (each stages
    and verifies V; only if all staged does any serve it, and each must then report V) before the alias moves.
    """
    import signal

    from rladapt.pool import ServeGroup
    from rladapt.pool.serve import check_engine

    check_engine(engine)

    def stop_on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # `kill` (SIGTERM) stops the replicas too, as Ctrl-C does

    signal.signal(signal.SIGTERM, stop_on_term)
    opened = _open(store)
    if wait:
        import time

        said = False
        try:
            while alias_name not in opened.aliases():
                if not said:
                    click.echo(f"waiting for the alias {alias_name} to name a version")
                    said = True
                time.sleep(2.0)
        except KeyboardInterrupt:
            click.echo("stopped before the alias named a version")
            return
    group = ServeGroup(opened, alias_name, replicas, engine=engine, port=port)
    started = group.start()
    click.echo(f"serving {alias_name} with {replicas} {engine} replica(s): {', '.join(started.replicas)}")
    try:
        group.follow(say=click.echo)
    except KeyboardInterrupt:
        click.echo("stopping the replicas")
    finally:
        group.stop()
