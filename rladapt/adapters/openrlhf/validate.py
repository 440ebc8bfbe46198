"""Native validation: the real parser of ``native.version`` judges the whole argv, native flags included.

The parser is built from the released source of that version when it is available here (``parser.find_source``);
without it there is no native check (``None``), which the pipeline notes on the launch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from packaging.version import Version

from rladapt.primitives.errors import Problem

from .checks import FlagView, check
from .parser import ParserUnavailable, build_parser_cached, find_source, parse, problems, split_native
from .translate import ENTRY_MODULE

if TYPE_CHECKING:
    from rladapt.plugins.native import NativeLaunch

NATIVE_FIELD = "spec.native.openrlhf"


def validate_native(native: NativeLaunch) -> list[Problem] | None:
    source = find_source(native.version)
    if source is None:
        return None
    try:
        parser = build_parser_cached(source, f"openrlhf-{native.version}")
    except ParserUnavailable:
        return None
    if tuple(native.argv[1:3]) != ("-m", ENTRY_MODULE):
        return [
            Problem(
                "native.argv",
                f"expected `<python> -m {ENTRY_MODULE} ...`",
                found=" ".join(native.argv[:3]),
            )
        ]
    args = native.argv[3:]
    # the spec's native.openrlhf tokens are appended last by translate: blame them, not rladapt
    first_user = len(args) - len(split_native(list(native.passthrough)))
    origin = {i: (NATIVE_FIELD if i >= first_user else "native.argv") for i in range(len(args))}
    found = problems(parser, args, origin, native.version)
    if found:
        return found
    namespace = parse(parser, args).namespace
    return check(FlagView.from_namespace(Version(native.version), namespace, NATIVE_FIELD))
