"""Typed launcher options: declared once (``Launcher.OPTIONS``), parsed by the one ``Launcher.merge_options``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rladapt.cli.inspect import plugins_report
from rladapt.plugins import Artifacts, Launcher, NativeLaunch, RunStatus
from rladapt.plugins._manager import load_registry
from rladapt.plugins.launcher import Option
from rladapt.primitives import UsageError


class Toy(Launcher):
    PLUGIN_NAME = "toy"
    OPTIONS: ClassVar[tuple[Option, ...]] = (
        Option("queue", str, "where it goes", pattern=r"[a-z]+", expected="a lowercase name"),
        Option("nodes", int, "how many", default=1, minimum=1, maximum=64),
        Option("share", float, "fraction", minimum=0, maximum=1),
        Option("fast", bool, "hurry", default=False),
        Option("mode", str, "how", choices=("a", "b")),
        Option("path", str, "where", validator=lambda v: None if v.startswith("/") else "an absolute path"),
    )

    def render(self, native: NativeLaunch, options: dict[str, Any]) -> Artifacts:
        return Artifacts(self.PLUGIN_NAME, request=self.merge_options(native, options))

    def submit(self, artifacts: Artifacts, run_dir: Path) -> dict[str, Any]:
        return {}

    def status(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        return RunStatus("UNKNOWN")

    def logs(self, handle: dict[str, Any], run_dir: Path, follow: bool = False) -> Iterator[str]:
        return iter(())

    def stop(self, handle: dict[str, Any], run_dir: Path) -> RunStatus:
        return RunStatus("STOPPED")


def native(spec_options: dict[str, Any] | None = None) -> NativeLaunch:
    return NativeLaunch(
        framework="toy",
        version="1",
        job_name="toy",
        argv=("python3", "-c", "pass"),
        launcher_options={"toy": spec_options or {}},
    )


def test_strings_become_typed_values_and_defaults_fill_the_rest() -> None:
    merged = Toy.merge_options(native(), {"queue": " gpu ", "share": "0.5", "fast": "Yes", "mode": "b"})
    assert merged == {"queue": "gpu", "nodes": 1, "share": 0.5, "fast": True, "mode": "b"}


def test_the_command_line_wins_over_the_spec_and_yaml_values_are_typed_too() -> None:
    merged = Toy.merge_options(native({"nodes": 8, "fast": True, "share": 1}), {"nodes": "2"})
    assert (merged["nodes"], merged["fast"], merged["share"]) == (2, True, 1.0)
    assert Toy.merge_options(native({"nodes": 4.0}), {})["nodes"] == 4  # a YAML float that is whole


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"nodes": "two"}, "toy launcher option nodes='two': expected an integer from 1 to 64"),
        ({"nodes": "0"}, "toy launcher option nodes='0': expected an integer from 1 to 64"),
        ({"nodes": True}, "toy launcher option nodes=True: expected an integer from 1 to 64"),
        ({"nodes": 1.5}, "toy launcher option nodes=1.5: expected an integer from 1 to 64"),
        ({"share": "nan"}, "toy launcher option share='nan': expected a number from 0 to 1"),
        ({"fast": "maybe"}, "toy launcher option fast='maybe': expected true or false"),
        ({"queue": "GPU"}, "toy launcher option queue='GPU': expected a lowercase name"),
        ({"queue": ["a"]}, "toy launcher option queue=['a']: expected a lowercase name"),
        ({"mode": "c"}, "toy launcher option mode='c': expected one of a, b"),
        ({"path": "rel"}, "toy launcher option path='rel': expected an absolute path"),
        (
            {"nodse": "2"},
            "unknown toy launcher option 'nodse' (did you mean 'nodes'?); expected one of: queue,",
        ),
    ],
)
def test_a_bad_value_names_the_option_what_it_expects_and_what_it_found(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError) as caught:
        Toy.merge_options(native(), options)
    assert caught.value.message.startswith(message)
    assert caught.value.exit_code == 2


def test_a_bad_value_in_the_spec_is_refused_the_same_way() -> None:
    with pytest.raises(UsageError, match="toy launcher option nodes=100: expected an integer from 1 to 64"):
        Toy.merge_options(native({"nodes": 100}), {})


def test_a_required_option_must_be_set() -> None:
    class Needs(Toy):
        OPTIONS = (Option("queue", str, "where it goes", required=True),)

    with pytest.raises(UsageError, match=r"toy launcher option queue is required \(a string\): pass"):
        Needs.merge_options(native(), {})
    assert Needs.merge_options(native({"queue": "q"}), {}) == {"queue": "q"}


def test_a_launcher_that_declares_help_strings_still_works() -> None:
    class Legacy(Toy):
        OPTIONS = {"queue": "where it goes"}  # type: ignore[assignment]

    assert Legacy.declared_options() == {"queue": Option("queue", help="where it goes")}
    assert Legacy.merge_options(native(), {"queue": "q", "run_id": "r-1"}) == {"queue": "q", "run_id": "r-1"}


def test_plugins_lists_each_option_with_type_default_and_help(monkeypatch: pytest.MonkeyPatch) -> None:
    from rladapt.plugins import _manager

    registry = load_registry(builtins={"slurm": "rladapt.launchers.slurm"}, use_entry_points=False)
    monkeypatch.setattr(_manager, "get_registry", lambda: registry)
    report = plugins_report()
    options = report["launchers"]["slurm"]["options"]
    assert options["ray_wait"] == {
        "type": "int",
        "default": 600,
        "help": "seconds to wait for every node to join the Ray cluster",
    }
    assert options["exclusive"]["type"] == "bool" and options["partition"]["default"] is None
