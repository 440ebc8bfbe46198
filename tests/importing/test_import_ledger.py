"""The import ledger (scripts/import_ledger.py): a fixed sample of upstream launches imported, rendered and judged
by upstream's own loader, offline; the committed ledgers' figures; and the check that fails on a launch that got
worse.

The sample (fixtures/import_ledger_sample.json) holds each launch as rladapt's script reader read it from the tag
(derived data, source named); the judge composes verl's config with Hydra from the real wheel's config tree,
parses OpenRLHF's flags with the real wheel's own parser, and reads NeMo-RL's example configs from the shared
fixtures (NeMo-RL has no release on PyPI). The whole field needs the repositories: ``python
scripts/import_ledger.py --check`` (see its docstring).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.wheels import REPO, download_wheel, extract

FIXTURES = Path(__file__).parent / "fixtures"
LEDGERS = sorted(FIXTURES.glob("import_ledger_*_v*.tsv"))
SAMPLE: list[dict[str, Any]] = json.loads((FIXTURES / "import_ledger_sample.json").read_text())["cases"]
NEMO_RL_CONFIGS = REPO / ".." / "shared" / "fixtures" / "nemo-rl"


@cache
def command() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_ledger", REPO / "scripts" / "import_ledger.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@cache
def tree(framework: str, version: str) -> Path:
    """What the framework's own loader needs, from the real release: verl's and OpenRLHF's wheels, NeMo-RL's
    example configs of the tag."""
    if framework == "nemo-rl":
        return NEMO_RL_CONFIGS / f"v{version}"
    root = extract(
        download_wheel(framework, version), REPO / ".cache" / "import-ledger" / f"{framework}-{version}"
    )
    if framework == "verl":
        return root
    return next(root.glob("**/openrlhf/cli/train_ppo_ray.py")).parents[2]


def _id(case: dict[str, Any]) -> str:
    return f"{case['framework']}-{case['version']}-{Path(case['path']).stem}"


def test_the_sample_covers_every_framework_of_the_ledgers() -> None:
    frameworks = {re.sub(r"^import_ledger_(.+?)_v.*$", r"\1", p.stem) for p in LEDGERS}
    assert frameworks and {c["framework"] for c in SAMPLE} == frameworks
    assert all(case["source"].endswith(f"@v{case['version']}") for case in SAMPLE)
    # derived data only: a launch as read, never a path of the machine that read it
    assert not re.search(r"/(work|root|tmp)/", json.dumps(SAMPLE))


@pytest.mark.parametrize("case", SAMPLE, ids=[_id(c) for c in SAMPLE])
def test_a_sampled_launch_is_judged_no_worse_than_in_the_ledger(case: dict[str, Any]) -> None:
    ledger = command()
    launch = ledger.Launch(tuple(case["argv"]), dict(case["env"]), script=case["script"])
    row = ledger.judge(
        case["framework"], case["version"], tree(case["framework"], case["version"]), case["path"], launch
    )
    assert ledger.RANK[row.outcome] >= ledger.RANK[case["outcome"]], (
        f"{case['path']}: {row.outcome}: {row.detail}"
    )


@pytest.mark.parametrize("ledger", LEDGERS, ids=[p.stem for p in LEDGERS])
def test_ledger_figures_match_its_rows(ledger: Path) -> None:
    reasons = command().REASONS
    lines = ledger.read_text().splitlines()
    assert re.match(r"# Import ledger: [\w-]+ [\w.]+ launches of [\w.-]+/[\w.-]+@v[\w.]+$", lines[0])
    rows = [line.split("\t") for line in lines if not line.startswith("#")]
    assert rows and all(len(row) == 6 and row[1] in ("exact", "refused", "wrong", "error") for row in rows)
    counts = {o: sum(row[1] == o for row in rows) for o in ("exact", "refused", "wrong", "error")}
    assert lines[2] == "# " + " ".join(f"{o} {n}" for o, n in counts.items()) + f" of {len(rows)}"
    # a refusal names one documented reason; a wrong or an error says what
    assert all(row[2].split(":", 1)[0] in reasons for row in rows if row[1] == "refused")
    assert all(row[2] for row in rows if row[1] in ("wrong", "error"))
    # no path of this machine in a ledger
    assert not any(re.search(r"/(work|root|tmp)/", row[2]) for row in rows)


def test_check_fails_on_a_launch_that_got_worse() -> None:
    ledger = command()
    committed = "# header\na.sh\texact\t\t3\t0\t\nb.sh\trefused\tx: y\t0\t0\t\nc.sh\twrong\tk (1 -> 2)\t3\t1\t\nd.sh\texact\t\t1\t0\t\n"
    rows = [
        ledger.Row("a.sh", "wrong", "k (1 -> 2)"),
        ledger.Row("b.sh", "exact"),
        ledger.Row("c.sh", "error", "boom"),
    ]
    assert ledger.regressions(committed, rows) == [
        "a.sh: exact before, now wrong: k (1 -> 2)",
        "d.sh: exact before, not in the field now",
    ]


def test_a_moved_log_location_is_a_difference_an_added_sink_is_not() -> None:
    first = command().first_difference
    assert first(
        "openrlhf", {"--logger.tensorboard_dir": "exp/runs"}, {"--logger.tensorboard_dir": "ckpt/m"}
    ) == ("--logger.tensorboard_dir ('exp/runs' -> 'ckpt/m')")
    assert (
        first("openrlhf", {"--logger.tensorboard_dir": None}, {"--logger.tensorboard_dir": "ckpt/m"}) is None
    )
    assert (
        first("verl", {"trainer.logger": ["console"]}, {"trainer.logger": ["console", "tensorboard"]}) is None
    )
    assert (
        first("verl", {"trainer.logger": ["wandb"]}, {"trainer.logger": ["console", "tensorboard"]})
        is not None
    )
    assert first("verl", {"a": 1, "b": 2}, {"a": 1.0, "b": 3}) == "b (2 -> 3)"


def test_an_unexplained_refusal_is_an_error_not_a_refusal() -> None:
    classify = command().classify
    assert classify("upstream: unrecognized arguments: --x") == (
        "refused",
        "upstream-rejects: upstream: unrecognized arguments: --x",
    )
    assert classify("a.sh: no RLJob spec renders the same verl 0.6.1 run")[0] == "error"


def test_verl_composition_is_hydras_on_the_wheels_config_tree() -> None:
    ledger = command()
    root = tree("verl", "0.6.1")
    module, values = ledger.verl_upstream(
        root, ["python3", "-m", "verl.trainer.main_ppo", "data.train_batch_size=77", "+x.y=1"], "0.6.1", None
    )
    assert module == "verl.trainer.main_ppo"
    assert values["data.train_batch_size"] == 77 and values["x.y"] == 1
    # struct mode: a key verl does not have is rejected, as verl itself rejects it
    with pytest.raises(ledger.Rejected, match="no_such_key"):
        ledger.verl_upstream(
            root, ["python3", "-m", "verl.trainer.main_ppo", "data.no_such_key=1"], "0.6.1", None
        )


def test_restate_classifies_the_rows_again_and_recounts() -> None:
    ledger = command()
    text = (
        "# Import ledger: nemo-rl 0.2.1 launches of o/r@v0.2.1\n# about\n# exact 1 refused 0 wrong 0 error 2 of 3\n"
        "# r\n# n\n"
        "a.yaml\terror\ttrainer.n_gpus_per_node is empty (a variable its caller did not set?)\t0\t0\t\n"
        "b.yaml\terror\tboom\t0\t0\t--set A=1 --unset B\n"
        "c.yaml\texact\t\t4\t1\t\n"
    )
    lines = ledger.restate(text).splitlines()
    assert lines[2] == "# exact 1 refused 1 wrong 0 error 1 of 3"
    assert lines[3] == "# refused by reason: empty-number 1"
    assert lines[4] == "# in spec.native (exact launches): 1 of 4 settings (25.0%)"
    assert lines[5].split("\t")[1:3] == [
        "refused",
        "empty-number: trainer.n_gpus_per_node is empty (a variable its caller did not set?)",
    ]
    assert lines[6] == "b.yaml\terror\tboom\t0\t0\t--set A=1 --unset B"
    assert ledger.restate("\n".join(lines) + "\n") == "\n".join(lines) + "\n"
