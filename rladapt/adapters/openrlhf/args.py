"""``Args``: the flags of one OpenRLHF launch as ``translate`` collects them and ``checks`` reads them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from rladapt.plugins import adapter
from rladapt.primitives.errors import Problem

from .versions import has_flag, spell


@dataclass
class Args:
    """The flags of one launch, by flat name, each with the spec field it came from."""

    version: Version
    values: dict[str, Any] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unsupported: list[Problem] = field(default_factory=list)

    def set(self, flat: str, value: Any, source: str) -> None:
        if not has_flag(self.version, flat):
            raise AssertionError(f"rladapt bug: openrlhf {self.version} has no --{flat}")
        self.values[flat] = value
        self.fields[flat] = source

    def get(self, flat: str, default: Any = None) -> Any:
        return self.values.get(flat, default)

    def cannot(self, path: str, what: str, found: object, hint: str | None = None) -> None:
        self.unsupported.append(
            adapter.unsupported(path, "openrlhf", self.version, what, found=str(found), expected=hint)
        )

    def argv(self) -> list[str]:
        out: list[str] = []
        for flat, value in self.values.items():
            if value is None or value is False:
                continue  # every boolean rladapt emits is a store_true flag defaulting to False
            option = spell(self.version, flat)
            if value is True:
                out.append(option)
            elif isinstance(value, (list, tuple)):
                out.extend([option, *(flag_text(v) for v in value)])
            else:
                out.extend([option, flag_text(value)])
        return out


def flag_text(value: object) -> str:
    """A flag value as argv text (a float by its repr, which argparse's float() reads back exactly)."""
    return repr(value) if isinstance(value, float) else str(value)
