"""Known NeMo-RL pitfalls fixed as named patches.

None yet: the pitfalls met so far are handled where they belong. The ``metric_name`` format change (PR 1291), the
mandatory ``colocated.resources.gpus_per_node`` (PR 1273), ``keep_top_k`` being read although optional, and the
``data.*`` → ``data.train.*`` move (issue 2719) are per-version translation in ``translate.py`` and checks in
``validate.py``; unconditional auto-resume (issue 345) is reported as unsupported, not patched over.
"""

from __future__ import annotations

from rladapt.plugins.patches import Patch

PATCHES: list[Patch] = []
