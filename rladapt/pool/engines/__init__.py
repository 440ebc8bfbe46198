"""The serving engines a pool group can switch: each one an ``Engine`` speaking that engine's own protocol.

``reference`` is rladapt's own CPU server (``rladapt.pool.engine``); ``vllm`` and ``sglang`` drive those servers
through the routes their code defines (cited in each module). ``engine_for(name)`` is the one lookup.
"""

from __future__ import annotations

from rladapt.primitives.errors import UsageError

from .base import Engine, EngineFailed
from .http import EngineCallFailed
from .reference import ReferenceEngine
from .sglang import SglangEngine
from .vllm import VllmEngine

__all__ = ["ENGINES", "Engine", "EngineCallFailed", "EngineFailed", "engine_for"]

_ENGINES: dict[str, type[Engine]] = {"reference": ReferenceEngine, "vllm": VllmEngine, "sglang": SglangEngine}

#: The names ``pool serve --engine`` and ``spec.pool.serve.engine`` take.
ENGINES = tuple(_ENGINES)


def engine_for(name: str) -> Engine:
    try:
        return _ENGINES[name]()
    except KeyError:
        raise UsageError(f"--engine {name!r}: expected one of {', '.join(ENGINES)}") from None
