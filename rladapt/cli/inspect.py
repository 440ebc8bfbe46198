"""Verbs that show what is installed: plugins (frameworks, versions, capabilities, launchers, patches)."""

from __future__ import annotations

from typing import Any

import click

from .options import format_option
from .output import dump_json


def register(cli: click.Group) -> None:
    cli.add_command(plugins)


def _options_report(launcher: Any) -> dict[str, dict[str, Any]]:
    """A launcher's declared options by name: type, default, help, and choices or required when they apply."""
    out: dict[str, dict[str, Any]] = {}
    for name, option in launcher.declared_options().items():
        entry: dict[str, Any] = {"type": option.type_name, "default": option.default, "help": option.help}
        if option.choices:
            entry["choices"] = list(option.choices)
        if option.required:
            entry["required"] = True
        if option.path:
            entry["path"] = True
        out[name] = entry
    return out


def plugins_report() -> dict[str, Any]:
    from rladapt.plugins import get_registry, unknown_capabilities

    reg = get_registry()
    frameworks = {}
    for name, entry in sorted(reg.frameworks.items()):
        try:
            versions = [
                {
                    "version": v.version,
                    "status": v.status,
                    "capabilities": sorted(v.capabilities),
                    "tested_with": v.tested_with,
                }
                for v in entry.obj.versions()
            ]
            error = None
        except Exception as exc:  # a plugin whose version table cannot load is shown, not fatal
            versions, error = [], f"{type(exc).__name__}: {exc}"
        own = getattr(entry.obj, "OWN_CAPABILITIES", {})
        unknown = unknown_capabilities((c for v in versions for c in v["capabilities"]), own)
        frameworks[name] = {
            "plugin": entry.plugin,
            "description": entry.obj.DESCRIPTION,
            "versions": versions,
            **({"error": error} if error else {}),
            **({"unknown_capabilities": unknown} if unknown else {}),
        }
    return {
        "frameworks": frameworks,
        "launchers": {
            n: {"plugin": e.plugin, "description": e.obj.DESCRIPTION, "options": _options_report(e.obj)}
            for n, e in sorted(reg.launchers.items())
        },
        "patches": {
            n: {
                "plugin": e.plugin,
                "framework": e.obj.framework,
                "versions": e.obj.versions,
                "kind": e.obj.kind,
                "issue": e.obj.issue,
                "summary": e.obj.summary,
            }
            for n, e in sorted(reg.patches.items())
        },
        "broken": [{"name": b.name, "error": b.error} for b in reg.broken],
        "blocked": sorted(reg.blocked),
        "conflicts": [
            {"kind": k, "name": n, "plugins": owners} for (k, n), owners in sorted(reg.conflicts.items())
        ],
    }


@click.command(short_help="List frameworks, launchers, patches, broken plugins.")
@format_option("text", "json")
@click.option(
    "--capabilities/--no-capabilities",
    default=True,
    show_default=True,
    help="Show the capability matrix of each framework.",
)
def plugins(fmt: str, capabilities: bool) -> None:
    """List frameworks (versions, capabilities), launchers, patches, and broken or blocked plugins."""
    report = plugins_report()
    if fmt == "json":
        click.echo(dump_json(report, what="the plugins report"))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console(width=140)
    ft = Table(title="frameworks", title_justify="left")
    for col in ("name", "plugin", "versions (newest supported is the default)", "description"):
        ft.add_column(col)
    for name, fw in report["frameworks"].items():
        versions = ", ".join(
            v["version"] + ("" if v["status"] == "supported" else f" ({v['status']})") for v in fw["versions"]
        )
        ft.add_row(name, fw["plugin"], versions or f"[red]{fw.get('error', 'none')}[/red]", fw["description"])
    console.print(ft)
    for name, fw in report["frameworks"].items() if capabilities else ():
        versions = fw["versions"]
        table = Table(title=f"{name}: capabilities per version", title_justify="left")
        table.add_column("capability")
        for v in versions:
            table.add_column(v["version"], justify="center")
        for cap in sorted({c for v in versions for c in v["capabilities"]}):
            table.add_row(cap, *("yes" if cap in v["capabilities"] else "-" for v in versions))
        console.print(table)
    lt = Table(title="launchers", title_justify="left")
    for col in ("name", "plugin", "options"):
        lt.add_column(col)
    for name, la in report["launchers"].items():
        lt.add_row(name, la["plugin"], ", ".join(la["options"]))
    console.print(lt)
    for name, la in report["launchers"].items():
        if not la["options"]:
            continue
        ot = Table(
            title=f"{name}: launcher options (-o KEY=VALUE, spec.launcher.{name})", title_justify="left"
        )
        for col in ("option", "type", "default", "help"):
            ot.add_column(col)
        for key, opt in la["options"].items():
            choices = f" (one of {', '.join(map(str, opt['choices']))})" if opt.get("choices") else ""
            default = (
                "required" if opt.get("required") else "-" if opt["default"] is None else str(opt["default"])
            )
            ot.add_row(key, opt["type"], default, opt["help"] + choices)
        console.print(ot)
    if report["patches"]:
        pt = Table(title="patches", title_justify="left")
        for col in ("id", "framework", "versions", "kind", "upstream issue"):
            pt.add_column(col)
        for pid, p in report["patches"].items():
            pt.add_row(pid, p["framework"], p["versions"], p["kind"], p["issue"])
        console.print(pt)
    for b in report["broken"]:
        console.print(f"[red]broken plugin {b['name']}: {b['error']}[/red]")
    for name, fw in report["frameworks"].items():
        for message in fw.get("unknown_capabilities", ()):
            console.print(f"[red]framework {name}: {message}[/red]", markup=True, highlight=False)
    for name in report["blocked"]:
        console.print(f"blocked plugin {name} (RLADAPT_BLOCK_PLUGINS)")
    for c in report["conflicts"]:
        console.print(
            f"[red]{c['kind']} {c['name']!r} registered by several plugins: {', '.join(c['plugins'])}[/red]"
        )
