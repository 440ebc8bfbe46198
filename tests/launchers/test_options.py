"""Typed launcher options: declared once (``Launcher.OPTIONS``), parsed by the one ``Launcher.merge_options``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rladapt.cli.inspect import plugins_report
from rladapt.plugins import Artifacts, Launcher, NativeLaunch, RunStatus, load_registry
from rladapt.plugins.launcher import Command, Option
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
        Option("amount", Decimal, "a plugin's own number type"),
        Option("config", str, "a file of this machine", path=True),
    )

    def render(
        self, native: NativeLaunch, command: Command, options: dict[str, Any], *, run_id: str | None
    ) -> Artifacts:
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
        ({"share": "nan"}, "toy launcher option share='nan': expected a finite number from 0 to 1"),
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
    import rladapt.plugins

    registry = load_registry(builtins={"slurm": "rladapt.launchers.slurm"}, use_entry_points=False)
    monkeypatch.setattr(rladapt.plugins, "get_registry", lambda: registry)
    report = plugins_report()
    options = report["launchers"]["slurm"]["options"]
    assert options["ray_wait"] == {
        "type": "int",
        "default": 600,
        "help": "seconds to wait for every node to join the Ray cluster",
    }
    assert options["exclusive"]["type"] == "bool" and options["partition"]["default"] is None


NON_FINITE_NUMBERS = [float("nan"), float("inf"), float("-inf")]  # YAML .nan, .inf, -.inf
NON_FINITE_TEXT = ["nan", "NaN", "inf", "-Infinity", " .inf", "1e999"]  # -o KEY=VALUE; 1e999 overflows to inf
# the text "nan" is a fine string (a queue named nan, a file named inf): only options that are no strings get it
CASES = [(name, value) for name in Toy.declared_options() for value in NON_FINITE_NUMBERS] + [
    (name, value)
    for name, option in Toy.declared_options().items()
    if option.type is not str
    for value in NON_FINITE_TEXT
]


@pytest.mark.parametrize(("name", "value"), CASES, ids=repr)
def test_a_non_finite_number_is_refused_for_every_option_type(name: str, value: Any) -> None:
    """nan and the infinities, from -o (text) or from spec.launcher.<name> (YAML .nan/.inf are floats), whatever
    the option's type: a string option used to keep "nan" from a YAML float, a plugin's Decimal took "NaN"."""
    for source in ("command line", "spec"):
        with pytest.raises(UsageError) as caught:
            if source == "spec":
                Toy.merge_options(native({name: value}), {})
            else:
                Toy.merge_options(native(), {name: value})
        assert caught.value.message.startswith(f"toy launcher option {name}={value!r}: expected ")
        assert caught.value.exit_code == 2


def test_a_plugin_number_type_is_refused_when_it_parses_to_nan() -> None:
    assert Toy.merge_options(native(), {"amount": "2.5"})["amount"] == Decimal("2.5")
    for text in ("NaN", "sNaN", "Infinity", "-inf"):
        with pytest.raises(UsageError, match=rf"toy launcher option amount='{text}': expected a Decimal"):
            Toy.merge_options(native(), {"amount": text})


def test_the_builtin_launchers_refuse_non_finite_numbers() -> None:
    """The issue's cases: -o stop_grace=nan (local), -o entrypoint_memory=inf (ray), and YAML .nan/.inf."""
    registry = load_registry(
        builtins={"local": "rladapt.launchers.local", "ray": "rladapt.launchers.ray"}, use_entry_points=False
    )
    local, ray = registry.launcher("local"), registry.launcher("ray")
    bare = native()
    cases = [
        (local, "stop_grace", "nan"),
        (local, "stop_grace", float("inf")),
        (ray, "entrypoint_memory", "inf"),
        (ray, "entrypoint_num_cpus", float("nan")),
        (ray, "entrypoint_num_gpus", "1e999"),  # overflows to inf
    ]
    for launcher, name, value in cases:
        with pytest.raises(UsageError, match=rf"{launcher.PLUGIN_NAME} launcher option {name}=.*: expected"):
            launcher.merge_options(bare, {name: value})
        spec = bare.model_copy(update={"launcher_options": {launcher.PLUGIN_NAME: {name: value}}})
        with pytest.raises(UsageError, match=rf"{launcher.PLUGIN_NAME} launcher option {name}=.*: expected"):
            launcher.merge_options(spec, {})


def test_a_path_option_is_made_absolute_against_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert Toy.merge_options(native(), {"config": "kc.yaml"})["config"] == str(tmp_path / "kc.yaml")
    assert Toy.merge_options(native(), {"config": "../x/./kc"})["config"] == str(tmp_path.parent / "x" / "kc")
    assert Toy.merge_options(native({"config": "~/kc"}), {})["config"] == str(tmp_path / "home" / "kc")
    absolute = str(tmp_path / "elsewhere" / "kc")
    assert Toy.merge_options(native(), {"config": absolute})["config"] == absolute
    # merged again (the runner renders twice, status reads the record): an absolute path stays as it is
    os.chdir("/")
    assert Toy.merge_options(native(), {"config": absolute})["config"] == absolute
    for bad in ("", "a\0b"):
        with pytest.raises(UsageError, match=r"toy launcher option config=.*: expected a path"):
            Toy.merge_options(native(), {"config": bad})


def test_every_path_valued_builtin_option_is_declared_a_path() -> None:
    """The launchers' options that name a file of this machine: each one is resolved, none is forgotten."""
    registry = load_registry(
        builtins={
            "local": "rladapt.launchers.local",
            "ray": "rladapt.launchers.ray",
            "slurm": "rladapt.launchers.slurm",
            "kubernetes": "rladapt.launchers.kubernetes",
        },
        use_entry_points=False,
    )
    paths = {
        (launcher, name)
        for launcher, entry in registry.launchers.items()
        for name, option in entry.obj.declared_options().items()
        if option.path
    }
    # kubernetes' workdir is a directory inside the image, not of this machine: it must stay as given
    assert paths == {("kubernetes", "kubeconfig")}
    assert registry.launcher("kubernetes").declared_options()["workdir"].path is False
