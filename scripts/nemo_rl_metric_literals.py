"""Derive, from a NeMo-RL git repository, the string literals of the files the NeMo-RL metric mapping cites, per
pinned tag: ``tests/adapters/nemo_rl/metric_literals.json`` (derived data; NeMo-RL has no wheel to read in tests).

    python scripts/nemo_rl_metric_literals.py GIT_DIR [OUT]

GIT_DIR is a clone of NVIDIA-NeMo/RL holding the tags ``v<version>`` (``git show <tag>:<file>``; nothing is
imported or copied). Each file's literals are the string constants of its syntax tree that look like metric
names (letters, digits, ``_`` and ``/``), and the constant parts of its f-strings. tests/adapters/nemo_rl/
test_nemo_rl_metrics.py checks the mapping against this file, and regenerates it when RLADAPT_NEMO_RL_GIT names
such a repository.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rladapt import compat  # noqa: E402
from rladapt.adapters.nemo_rl.metrics import names  # noqa: E402

OUT = REPO / "tests" / "adapters" / "nemo_rl" / "metric_literals.json"
#: The logger file: its TensorBoard backend's tag rule and directory are checked too.
LOGGER = "nemo_rl/utils/logger.py"
_NAME = re.compile(r"[A-Za-z0-9_/@.\-]{1,80}")


def literals(source: str) -> list[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _NAME.fullmatch(node.value):
            found.add(node.value)
    return sorted(found)


def show(git_dir: Path, tag: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{tag}:{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def derive(git_dir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in compat.pinned("nemo-rl"):
        tag = f"v{entry.version}"
        files = sorted({logged.file for _, logged in names(entry.version).logged()} | {LOGGER})
        out[entry.version] = {
            "tag": tag,
            "commit": subprocess.run(
                ["git", "--git-dir", str(git_dir), "rev-list", "-n", "1", tag],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip(),
            "files": {f: literals(show(git_dir, tag, f)) for f in files},
        }
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    git_dir = Path(argv[0])
    out = Path(argv[1]) if len(argv) > 1 else OUT
    out.write_text(json.dumps(derive(git_dir), indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
