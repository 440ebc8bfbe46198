"""``hydra_value``: any string written as a Hydra override value reads back as itself with Hydra's own parser
(the one verl's @hydra.main and NeMo-RL's parse_hydra_overrides apply)."""

from __future__ import annotations

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from rladapt.adapters.common import hydra_value
from rladapt.compat.schema._values import hydra_value as read_value

#: the characters of the Jinja chat template upstream's Qwen3 thinking recipe sets (NeMo-RL 0.7.0
#: grpo-qwen3-30ba3b-thinking-swe1-16n8g-megatron-cp2-r3-async-gym.yaml): a literal backslash-n inside a quoted
#: Jinja string, quotes of both kinds, braces, newlines, percent signs
CHAT_TEMPLATE = (
    "{%- if tools %}\n    {{- '<|im_start|>system\\n' }}\n    {%- for tool in tools %}\n"
    '        {{- "\\n" }}{{- tool | tojson }}\n    {%- endfor %}\n{%- endif %}\n'
)


@pytest.mark.parametrize(
    "text",
    [
        CHAT_TEMPLATE,
        "a\\b",
        "ends with a backslash\\",
        "ends with two\\\\",
        "it's",
        "\\'",
        "\\\\'x",
        "'",
        'say "hi"',
        "a b,c=d",
        "",
        "null",
        "1e-3",
    ],
)
def test_any_string_survives_hydras_parser(text: str) -> None:
    written = hydra_value(text)
    parsed = OverridesParser.create().parse_overrides([f"+k={written}"])[0].value()
    assert parsed == text, written
    assert read_value(written) == text  # the validator's reading of the same item
