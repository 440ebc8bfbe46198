"""The native keys a NeMo-RL launch sets, as NeMo-RL reads them (``rladapt upgrade``, ``matrix onboard``): the
generated config file plus its overrides."""

from __future__ import annotations

import yaml

from rladapt.adapters.common import override_value
from rladapt.plugins.adapter import NativeSetting
from rladapt.plugins.native import NativeLaunch

from .validate import config_file, leaves, overrides


def native_settings(native: NativeLaunch) -> list[NativeSetting]:
    out = []
    path = config_file(native)
    if path is not None and path in native.files:
        document = yaml.safe_load(native.files[path]) or {}
        if isinstance(document, dict):
            body = {k: v for k, v in document.items() if k != "defaults"}
            for key, value in leaves(body):
                out.append(NativeSetting(key, value, native.origins.get(key, f"nemo-rl config: {key}")))
    for i, item in enumerate(overrides(native)):
        prefix = item[: len(item) - len(item.lstrip("+~"))]
        key, sep, rhs = item[len(prefix) :].partition("=")
        out.append(NativeSetting(key, override_value(prefix, sep, rhs), f"spec.native.nemo-rl[{i}]"))
    return out
