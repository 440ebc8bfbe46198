"""``TranslationBuilder``: what an adapter's ``translate`` accumulates while it walks a job, in one place.

Every built-in adapter used to carry a private copy of the same few lines (set a native key and remember which spec
field it came from, collect notes, collect the problems of what the version cannot express); a third-party adapter
gets the same machinery here instead of a fourth copy.

.. versionadded:: 0.3
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from .adapter import unsupported

if TYPE_CHECKING:
    from packaging.version import Version

    from rladapt.primitives import RLJob
    from rladapt.primitives.errors import Problem

#: The adapter's own table of native key names for the version being translated (e.g. a ``Keys`` dataclass).
K = TypeVar("K")


@dataclass(kw_only=True)
class TranslationBuilder(Generic[K]):
    """The native settings, origins, notes and problems of one translation of ``job`` to ``framework`` ``version``.

    ``set`` records a native key with the spec field it comes from (``origins``: native validation and
    ``render --explain`` blame that field); ``unsupported`` collects a problem instead of raising, so one render
    reports everything the version cannot express at once (raise ``UnsupportedError(b.problems)`` at the end).
    ``nowhere`` is the remark of a problem with no ``first`` version: ``"any"`` (no version of the framework has
    it) or ``"pinned"`` (no pinned version has it). Subclass it for a framework's own way of writing settings
    (verl writes Hydra overrides in order, ``set`` is overridden there).
    """

    framework: str
    job: RLJob
    version: Version
    k: K
    nowhere: Literal["any", "pinned"] = "any"
    values: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def set(self, key: str, value: Any, source: str) -> None:
        """Set native ``key``; ``source`` is the spec field it comes from (native validation blames it)."""
        self.values[key] = value
        self.origins[key] = source

    def unsupported(
        self,
        path: str,
        what: str,
        first: str | None = None,
        found: object = None,
        *,
        expected: str | None = None,
    ) -> None:
        """Collect "<framework> <version> cannot express ``what``", blamed on the spec field ``path``; ``first``
        is the first version that can."""
        self.problems.append(
            unsupported(
                path,
                self.framework,
                self.version,
                what,
                first=first or None,
                nowhere=self.nowhere,
                found=found,
                expected=expected,
            )
        )

    def nested(self) -> dict[str, Any]:
        """``values`` (dotted keys) as nested mappings, in the order they were set."""
        root: dict[str, Any] = {}
        for dotted, value in self.values.items():
            node = root
            *parents, leaf = dotted.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
        return root
