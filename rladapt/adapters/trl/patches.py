"""Known TRL pitfalls fixed as named patches.

None yet: the version differences met so far (``max_prompt_length`` removed after 0.26, ``top_k``'s "off" value
moving from None to 0, ``bf16`` defaulting on in GRPOConfig 0.23.1) are per-version translation in
``translate.py``.
"""

from __future__ import annotations

from rladapt.plugins.patches import Patch

PATCHES: list[Patch] = []
