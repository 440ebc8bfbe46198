"""The compatibility matrix: ``compat-matrix/<framework>.toml``, read as data (shipped in the wheel).

The reading itself is the plugin contract's (``FrameworkAdapter.MATRIX``), so external adapters read their own
matrices the same way; this module names the bundled files of the built-in adapters.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

from rladapt.plugins._matrix import MatrixEntry, read_matrix
from rladapt.primitives.errors import PluginError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

__all__ = ["MatrixEntry", "bundled", "bundled_snapshots", "pinned"]


def bundled(framework: str) -> Traversable:
    """The bundled matrix file of a built-in framework (the built-in adapters' ``MATRIX``)."""
    return resources.files("rladapt.compat").joinpath("matrix").joinpath(f"{framework}.toml")


@cache
def pinned(framework: str) -> tuple[MatrixEntry, ...]:
    """The pinned versions of ``framework``, oldest first, as the bundled matrix lists them."""
    ref = bundled(framework)
    if not ref.is_file():
        raise PluginError(f"no compatibility matrix for {framework!r} (compat-matrix/{framework}.toml)")
    return read_matrix(ref, f"compat-matrix/{framework}.toml")


def bundled_snapshots(framework: str) -> Traversable:
    """The bundled schema snapshots folder of a built-in framework (the built-in adapters' ``SNAPSHOTS``)."""
    return resources.files("rladapt.compat").joinpath("matrix", "snapshots", framework)
