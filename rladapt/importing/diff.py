"""``rladapt diff``: two launches (specs or native launches) compared by their effective native configuration."""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rladapt.plugins.effective import ADJUSTED, CONFIG_FILE, INTERPOLATED, Effective, derived, same
from rladapt.primitives import UsageError, load_job_text
from rladapt.primitives.errors import one_line, quote

from .importer import at_line, framework_importer, importers, launch_effective, read_back_only, read_native


@dataclass(frozen=True)
class Side:
    """One side of a diff: its effective config and, per key, where the value came from."""

    label: str
    effective: Effective
    sources: dict[str, str]

    def source(self, key: str) -> str:
        found = self.sources.get(key)
        default = f"{self.effective.framework} {self.effective.version} default"
        if found is None:
            return default
        if found.startswith(ADJUSTED):
            return f"{self.effective.framework} {self.effective.version} {found}"
        return f"{default} {found[2:]}" if found.startswith(INTERPOLATED) else found


def read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{quote(path)}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{quote(path)}: a directory, not a spec or launch script") from None
    except UnicodeDecodeError:
        raise UsageError(f"{quote(path)}: not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"{quote(path)}: cannot be read ({exc.strerror})") from None


#: The header line ``rladapt import`` writes when it was given ``--set``/``--unset`` (then the words, shell-quoted).
READ_WITH = "Read with: "


def read_with(sets: Sequence[str], unsets: Sequence[str]) -> str:
    """The header line recording how ``import`` read the launch script ("" when it needed nothing)."""
    words = [w for item in sets for w in ("--set", item)] + [w for name in unsets for w in ("--unset", name)]
    return READ_WITH + shlex.join(words) if words else ""


def recorded_reading(path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The ``--set`` and ``--unset`` an imported spec's header records (``read_with``), so that ``diff`` of the
    spec and its script needs them no more; ((), ()) for anything else."""
    try:
        head = Path(path).read_text(encoding="utf-8").splitlines()[:5]
    except (OSError, UnicodeDecodeError):
        return (), ()  # read_text reports it when the side is read
    line = next((h[2:] for h in head if h.startswith("# " + READ_WITH)), None)
    if line is None:
        return (), ()
    try:
        words = shlex.split(line[len(READ_WITH) :])
    except ValueError:
        return (), ()
    pairs = list(zip(words[::2], words[1::2], strict=False))
    return (
        tuple(value for flag, value in pairs if flag == "--set"),
        tuple(value for flag, value in pairs if flag == "--unset"),
    )


def is_spec(text: str) -> bool:
    """A YAML document of kind RLJob (a launch script never starts with ``apiVersion:``/``kind:`` keys)."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(data, dict) and data.get("kind") == "RLJob"


def side(path: str, framework: str | None, version: str | None, sets: dict[str, str], registry: Any) -> Side:
    """The effective config of the spec or native launch at ``path``."""
    from rladapt.pipeline import render_native

    text = read_text(path)
    if is_spec(text):
        if framework is None:
            raise UsageError(
                f"{quote(path)} is an RLJob spec: name the framework to render it on with -f NAME[==VERSION]"
            )
        fw = framework_importer(framework, registry)
        job = load_job_text(text, [], path)
        target = f"{framework}=={version}" if version else framework
        native = render_native(job, target, registry).native
        eff = launch_effective(fw, native)
        # an adapter that records no passthrough (NeMo-RL) appends spec.native.<fw> verbatim after its own argv
        items = native.passthrough or tuple(job.spec.native.get(framework, ()))
        passthrough = {item: i for i, item in enumerate(items)}
        sources: dict[str, str] = {}
        for key, item in eff.sources.items():
            if derived(item):
                sources[key] = item
            elif item in passthrough:
                sources[key] = f"spec.native.{framework}[{passthrough[item]}]"
            else:
                sources[key] = native.origins.get(key, "rladapt")
        return Side(path, eff, sources)
    readers = {framework: framework_importer(framework, registry)} if framework else importers(registry)
    names = list(readers)
    for name, fw in readers.items():
        resolved = version or registry.framework(name).resolve_version(None).version
        try:
            launch = read_native(fw, text, path, sets, resolved)
        except UsageError:
            if len(names) == 1:
                raise
            continue
        try:
            eff = fw.effective(list(launch.argv), resolved)
        except UsageError as exc:
            raise at_line(exc, launch) from None
        line = f"{path}:{launch.line}"
        return Side(path, eff, {k: _launch_source(s, line) for k, s in eff.sources.items()})
    raise UsageError(f"{quote(path)}: neither an RLJob spec nor a {' or '.join(names)} launch; give -f NAME")


def _launch_source(source: str, line: str) -> str:
    """Where a launch's value came from: a default, its interpolation or a post-parse rule, the config file that
    set it, else the line."""
    if derived(source):
        return source
    if source.startswith(CONFIG_FILE):
        return source[len(CONFIG_FILE) :]
    return line


@dataclass(frozen=True)
class Difference:
    key: str
    a: Any
    b: Any
    in_a: bool
    in_b: bool
    source_a: str
    source_b: str


def compare(a: Side, b: Side) -> list[Difference]:
    if (a.effective.framework, a.effective.version) != (b.effective.framework, b.effective.version):
        raise UsageError(
            f"{quote(a.label)} is {a.effective.framework} {a.effective.version} and {quote(b.label)} is "
            f"{b.effective.framework} {b.effective.version}: compare launches of one version (-f NAME==VERSION)"
        )
    out = []
    va, vb = a.effective.values, b.effective.values
    for key in dict.fromkeys([*va, *vb]):
        if key in va and key in vb and same(va[key], vb[key]):
            continue
        if read_back_only(a.effective.framework, key, va.get(key), vb.get(key)):
            continue  # where rladapt reads the metrics back from: not a setting of the run
        out.append(
            Difference(key, va.get(key), vb.get(key), key in va, key in vb, a.source(key), b.source(key))
        )
    return out


def _shown(value: Any, present: bool) -> str:
    return json.dumps(value) if present else "(absent)"


def as_text(a: Side, b: Side, diffs: list[Difference]) -> str:
    head = f"{a.effective.framework} {a.effective.version}: "
    if not diffs:
        return head + f"{a.label} and {b.label} have the same effective configuration"
    lines = [head + f"{len(diffs)} key{'s' if len(diffs) != 1 else ''} differ ({a.label} | {b.label})"]
    for d in diffs:
        lines.append(d.key)
        lines.append(f"  A: {_shown(d.a, d.in_a)}  ({d.source_a})")
        lines.append(f"  B: {_shown(d.b, d.in_b)}  ({d.source_b})")
    return "\n".join(one_line(line) for line in lines)


def as_json(a: Side, b: Side, diffs: list[Difference]) -> str:
    data = {
        "framework": a.effective.framework,
        "version": a.effective.version,
        "a": a.label,
        "b": b.label,
        "equal": not diffs,
        "differences": [
            {
                "key": d.key,
                "a": {"present": d.in_a, "value": d.a, "source": d.source_a},
                "b": {"present": d.in_b, "value": d.b, "source": d.source_b},
            }
            for d in diffs
        ],
    }
    return json.dumps(_finite(data), indent=2, allow_nan=False)


def _finite(value: Any) -> Any:
    """JSON holds no inf/nan (RFC 8259 section 6); a framework default may be one, so it is shown as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
