"""MkDocs hook: the reference pages, generated from the code at every build so that they cannot drift.

``mkdocs.yml`` names this file under ``hooks:``; ``on_files`` adds five virtual pages (nothing is written into
``docs/``, nothing generated is committed):

* ``reference/cli.md``: every verb and subcommand of ``rladapt.cli.cli``, with its ``--help`` as users see it;
* ``reference/spec.md``: every field of the spec, from the JSON Schema ``rladapt schema`` prints;
* ``reference/launchers.md``: each built-in launcher's typed ``-o`` options, from ``Launcher.OPTIONS``;
* ``reference/hooks.md``: the plugin hooks, from the docstrings of ``rladapt.plugins.hookspecs``;
* ``reference/matrix.md``: the compatibility matrix, from ``rladapt.compat.report`` (what ``rladapt matrix`` prints).

Only rladapt's own plugins are documented (entry points are not loaded): a plugin installed in the building
environment must not change the project's documentation. Each ``*_page`` function returns Markdown and needs no
MkDocs, so ``tests/cli/test_docs.py`` checks them without building the site.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from typing import Any

import click
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from rladapt.cli import cli
from rladapt.compat.report import markdown_report
from rladapt.plugins import Registry, hookspecs, load_registry
from rladapt.primitives import json_schema

#: Help is rendered at the width the CLI itself caps it to (``max_content_width``), not the builder's terminal.
HELP_WIDTH = 110


def _registry() -> Registry:
    return load_registry(use_entry_points=False)


# --- CLI ----------------------------------------------------------------------------------------------------


def _walk(command: click.Command, ctx: click.Context) -> list[tuple[click.Command, click.Context]]:
    """``command`` and, for a group, every visible subcommand below it, depth first in the group's order."""
    found = [(command, ctx)]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            found += _walk(sub, click.Context(sub, info_name=name, parent=ctx, **sub.context_settings))
    return found


def _anchor(path: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")


def cli_page() -> str:
    root = click.Context(cli, info_name="rladapt", terminal_width=HELP_WIDTH, **cli.context_settings)
    commands = _walk(cli, root)
    out = [
        "# CLI reference\n\n",
        "Generated from the command line itself (`rladapt.cli`) when the site is built: each section is the verb's "
        "`--help`, word for word. Exit codes: `0` ok, `2` spec or usage error, `1` anything else. Messages go "
        "to stderr; `rladapt --debug VERB ...` adds a traceback and traces every plugin hook call. Every verb has "
        "`--help`; `rladapt --version` prints the version.\n\n",
        "| command | what it does |\n| --- | --- |\n",
    ]
    deprecated: list[str] = []
    for command, ctx in commands[1:]:
        path = ctx.command_path
        if command.deprecated:
            deprecated.append(path)
            continue
        summary = command.get_short_help_str(limit=200).replace("|", "\\|")
        out.append(f"| [`{path}`](#{_anchor(path)}) | {summary} |\n")
    if deprecated:
        out.append(
            "\nDeprecated spellings, kept for one minor version (each says what replaces it): "
            + ", ".join(f"`{p}`" for p in deprecated)
            + ".\n"
        )
    for command, ctx in commands:
        if command.deprecated:
            continue
        out.append(
            f"\n## {ctx.command_path} {{ #{_anchor(ctx.command_path)} }}\n\n```text\n{command.get_help(ctx)}\n```\n"
        )
    return "".join(out)


# --- spec fields ----------------------------------------------------------------------------------------------


def _cell(text: Any) -> str:
    """One Markdown table cell: no line breaks, no bare pipes."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _ref_name(node: dict[str, Any]) -> str | None:
    ref = node.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def _type(node: dict[str, Any]) -> str:
    """A field's type as a reader writes it: ``integer > 0 or null``, ``list of Pool``, ``one of a, b``."""
    name = _ref_name(node)
    if name:
        return name
    for key in ("anyOf", "oneOf"):
        if key in node:
            return " or ".join(dict.fromkeys(_type(n) for n in node[key]))
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    kind = node.get("type")
    if kind == "array":
        return f"list of {_type(node.get('items', {}))}"
    if kind == "object":
        extra = node.get("additionalProperties")
        return f"map of {_type(extra)}" if isinstance(extra, dict) and extra else "mapping"
    text = str(kind or "any")
    bounds = [
        f"{symbol} {node[key]}"
        for key, symbol in (
            ("exclusiveMinimum", ">"),
            ("minimum", ">="),
            ("exclusiveMaximum", "<"),
            ("maximum", "<="),
        )
        if key in node
    ]
    if "pattern" in node:
        bounds.append(f"matching `{node['pattern']}`")
    return f"{text} {', '.join(bounds)}" if bounds else text


def _objects(node: dict[str, Any]) -> list[str]:
    """The ``$defs`` names an object-valued field leads to (directly, in a list or map, or as one option)."""
    name = _ref_name(node)
    if name:
        return [name]
    found: list[str] = []
    for key in ("anyOf", "oneOf"):
        for option in node.get(key, []):
            found += _objects(option)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            found += _objects(node[key])
    return found


def spec_page() -> str:
    schema = json_schema()
    defs: dict[str, dict[str, Any]] = schema["$defs"]
    out = [
        "# Spec reference\n\n",
        "Every field of an `RLJob`, generated from its JSON Schema (`rladapt schema`) when the site is built. "
        "Sections follow the spec's nesting; a field whose value is an object links to its own section. A "
        "default of `null` means the framework's own default applies (rladapt emits nothing). "
        "What each field becomes on each framework: [field mappings](../concepts/mappings.md).\n",
    ]
    documented: dict[str, str] = {}  # $defs name -> the path of the section that documents it
    queue: list[tuple[str, dict[str, Any]]] = [("RLJob", schema)]
    while queue:
        path, node = queue.pop(0)
        children: list[tuple[str, dict[str, Any]]] = []
        out.append(f"\n## `{path}` {{ #{_anchor(path)} }}\n\n")
        if node.get("description") and node is not schema:
            out.append(_cell(node["description"]) + "\n\n")
        out.append("| field | type | default | description |\n| --- | --- | --- | --- |\n")
        required = set(node.get("required", []))
        for field, prop in node.get("properties", {}).items():
            child = field if path == "RLJob" else f"{path}.{field}"
            kind = _type(prop)
            for name in _objects(prop):
                target = documented.get(name)
                if target is None:
                    suffix = (
                        "[]" if prop.get("type") == "array" else ".*" if prop.get("type") == "object" else ""
                    )
                    target = documented[name] = child + suffix
                    children.append((target, defs[name]))
                # a whole word outside an earlier link: Secret must not match inside [SecretSource](...)
                kind = re.sub(rf"(?<![\[\w]){name}(?![\w\]])", f"[{name}](#{_anchor(target)})", kind, count=1)
            if field in required:
                default = "required"
            elif "default" in prop:
                default = f"`{json.dumps(prop['default'])}`"
            else:
                default = {"array": "`[]`", "object": "`{}`"}.get(prop.get("type", ""), "(its defaults)")
            description = prop.get("description", "")
            out.append(f"| `{field}` | {_cell(kind)} | {_cell(default)} | {_cell(description)} |\n")
        queue[:0] = children  # depth first: a section's own sections follow it, in field order
    return "".join(out)


# --- launchers -------------------------------------------------------------------------------------------------


def launchers_page() -> str:
    registry = _registry()
    out = [
        "# Launcher options\n\n",
        "Each launcher's options, generated from its typed declaration (`Launcher.OPTIONS`) when the site is "
        "built. Set one with `-o KEY=VALUE` on `launch` and `render --launcher`, or as a default under "
        "`spec.launcher.<name>` in the spec (`-o` wins). `rladapt plugins` lists the same for every installed "
        "launcher, third-party ones included. How launchers run a job: [launchers](../concepts/launchers.md).\n",
    ]
    for name, entry in sorted(registry.launchers.items()):
        launcher = entry.obj
        out.append(f"\n## {name}\n\n{_cell(launcher.DESCRIPTION)}\n\n")
        options = launcher.declared_options()
        if not options:
            out.append("No options.\n")
            continue
        out.append(
            "| option | type | default | a good value | what it does |\n| --- | --- | --- | --- | --- |\n"
        )
        for key, option in options.items():
            default = (
                "required" if option.required else "-" if option.default is None else f"`{option.default}`"
            )
            out.append(
                f"| `{key}` | {option.type_name} | {_cell(default)} | {_cell(option.describe())} "
                f"| {_cell(option.help)} |\n"
            )
    return "".join(out)


# --- hooks -----------------------------------------------------------------------------------------------------


def _markdown(doc: str) -> str:
    """A hookspec docstring (reST field lists, ``literals``, ``.. versionadded::``) as Markdown."""
    text = inspect.cleandoc(doc).replace(
        "``.. versionadded::``", "an *Added in* line"
    )  # the directive, named
    text = re.sub(r"``(.+?)``", r"`\1`", text)
    out: list[str] = []
    for line in text.splitlines():
        field = re.match(r":param (\w+):\s*(.*)", line)
        if field:
            out.append(f"- **`{field[1]}`**: {field[2]}")
        elif line.startswith(":returns:"):
            out.append(f"- **returns**: {line[len(':returns:') :].strip()}")
        elif line.startswith(".. versionadded::"):
            out.append(f"*Added in {line.split('::', 1)[1].strip()}.*")
        elif line.startswith("    ") and out and out[-1].startswith("- **"):
            out[-1] += " " + line.strip()  # the continuation of a field
        else:
            out.append(line)
    return "\n".join(out)


def hooks_page() -> str:
    out = [
        "# Plugin hooks\n\n",
        "Generated from `rladapt/plugins/hookspecs.py` when the site is built: the contract a plugin implements, "
        "every argument and return value as the host calls it. How to write one: "
        "[write a plugin](../how-to/write-a-plugin.md).\n\n",
        _markdown(hookspecs.__doc__ or ""),
        "\n",
    ]
    specs: list[Callable[..., Any]] = [
        f
        for name, f in vars(hookspecs).items()
        if callable(f) and hasattr(f, f"{hookspecs.PROJECT_NAME}_spec") and name.startswith("rladapt_")
    ]
    for spec in specs:
        signature = str(inspect.signature(spec)).replace("'", "")
        out.append(
            f"\n## `{spec.__name__}`\n\n```python\n@hookimpl\ndef {spec.__name__}{signature}: ...\n```\n\n"
        )
        out.append(_markdown(spec.__doc__ or "") + "\n")
    return "".join(out)


# --- compatibility matrix --------------------------------------------------------------------------------------


def matrix_page() -> str:
    report = markdown_report(_registry())
    body = report.split("# Compatibility matrix\n", 1)[-1]
    return (
        "# Compatibility matrix\n\n"
        "Generated when the site is built from the adapters' declarations and the bundled matrix "
        "(`rladapt matrix` prints the same report; `compat-matrix/REPORT.md` is its committed copy). What the "
        "matrix is and how versions are pinned and checked: [the matrix](../concepts/matrix.md).\n" + body
    )


PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_page,
    "reference/spec.md": spec_page,
    "reference/launchers.md": launchers_page,
    "reference/hooks.md": hooks_page,
    "reference/matrix.md": matrix_page,
}


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for uri, page in PAGES.items():
        files.append(File.generated(config, uri, content=page()))
    return files
