"""How the plugin manager calls hooks through pluggy: arguments, unknown hooks, wrappers, result types,
blocking, tracing and the real load order."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from rladapt.pipeline import render_native
from rladapt.plugins import TRACE_ENV, NativeLaunch, Problem, hookimpl, load_registry
from rladapt.primitives import PluginError, RLJob, SpecError, load_job_text
from tests.plugins.test_plugins import JOB, plugin, registry, toy_plugin
from tests.primitives.test_loading import MINIMAL


def test_local_variable_named_like_a_hook_argument_is_not_passed() -> None:
    def policy(job: RLJob) -> RLJob:
        framework = "a local, not the hook argument"
        labels = {**job.metadata.labels, "seen": str(len(framework))}
        return job.model_copy(update={"metadata": job.metadata.model_copy(update={"labels": labels})})

    rendered = render_native(JOB, "toy", registry(("policy", plugin(rladapt_modify_job=policy))))
    assert rendered.job.metadata.labels["seen"] == "30"


def test_framework_argument_is_the_bare_name() -> None:
    seen: list[str] = []

    def policy(job: RLJob, framework: str) -> None:
        seen.append(framework)

    render_native(JOB, "toy==2.0", registry(("policy", plugin(rladapt_modify_job=policy))))
    assert seen == ["toy"]


def test_misspelled_hook_makes_that_plugin_broken_and_others_keep_working() -> None:
    typo = plugin(rladapt_modify_jobs=lambda job: job, rladapt_register_launchers=lambda: [])
    reg = registry(("typo", typo))
    assert [b.name for b in reg.broken] == ["typo"]
    assert "unknown hook 'rladapt_modify_jobs'" in reg.broken[0].error
    assert "typo" not in reg.plugins and reg.pm.get_plugin("typo") is None  # unregistered
    assert render_native(JOB, "toy", reg).native.framework == "toy"


@pytest.mark.parametrize("kind", ["wrapper", "hookwrapper"])
@pytest.mark.parametrize("hook", ["rladapt_modify_native", "rladapt_add_checks", "rladapt_register_patches"])
def test_wrapper_implementations_are_refused_at_registration(kind: str, hook: str) -> None:
    def wrap() -> Iterator[None]:
        yield

    marked = hookimpl(wrapper=True)(wrap) if kind == "wrapper" else hookimpl(hookwrapper=True)(wrap)
    reg = registry(("wrapping", types.SimpleNamespace(**{hook: marked})))
    assert [b.name for b in reg.broken] == ["wrapping"]
    assert f"{hook}: {kind}=True implementations are not supported" in reg.broken[0].error
    assert reg.pm.get_plugin("wrapping") is None
    assert render_native(JOB, "toy", reg).native.framework == "toy"


@pytest.mark.parametrize(
    ("hook", "value", "expected"),
    [
        ("rladapt_modify_job", 7, "plugin 'x' rladapt_modify_job returned int, expected RLJob or None"),
        (
            "rladapt_modify_native",
            "argv",
            "plugin 'x' rladapt_modify_native returned str, expected NativeLaunch",
        ),
        (
            "rladapt_add_checks",
            {"a": 1},
            "plugin 'x' rladapt_add_checks returned dict, expected a list of Problem",
        ),
        (
            "rladapt_add_checks",
            ["oops"],
            "plugin 'x' rladapt_add_checks returned a list holding str, expected",
        ),
    ],
)
def test_chain_result_of_the_wrong_type_is_a_plugin_error_naming_it(
    hook: str, value: object, expected: str
) -> None:
    reg = registry(("x", types.SimpleNamespace(**{hook: hookimpl(lambda: value)})))
    with pytest.raises(PluginError) as info:
        render_native(JOB, "toy", reg)
    assert expected in info.value.message and info.value.exit_code == 1


def test_blocking_goes_through_pluggy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLADAPT_BLOCK_PLUGINS", "toy,verl")
    reg = load_registry(
        builtins={"verl": "rladapt.adapters.verl", "local": "rladapt.launchers.local"},
        extra=[("toy", toy_plugin())],
        use_entry_points=False,
    )
    assert reg.pm.is_blocked("verl") and reg.pm.is_blocked("toy") and not reg.pm.is_blocked("local")
    assert sorted(reg.blocked) == ["toy", "verl"] and reg.plugins == ["local"]
    assert reg.pm.register(toy_plugin(), name="toy") is None  # pluggy itself refuses the blocked name


def _install_external(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> None:
    """A real distribution with an ``rladapt`` entry point, on sys.path for this test only."""
    dist = tmp_path / f"{name}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[rladapt]\n{name} = {name}_mod\n")
    (tmp_path / f"{name}_mod.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, f"{name}_mod", raising=False)


POLICY = """
from rladapt.plugins import Problem, hookimpl

@hookimpl
def rladapt_add_checks(job):
    return [Problem("metadata.labels", "{who}")]

@hookimpl
def rladapt_modify_native(native):
    return native.with_env({{"ORDER": native.env.get("ORDER", "") + "{who},"}})
"""

TOY = """
from tests.plugins.test_plugins import ToyAdapter

@hookimpl
def rladapt_register_frameworks():
    return [ToyAdapter()]
"""


def test_load_order_builtins_run_first_and_external_plugins_get_the_last_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # external plugins are registered first and built-ins after (tox's order); pluggy calls the last
    # registered first, so a built-in's implementation runs before an external one's, which sees its result
    _install_external(tmp_path, monkeypatch, "extpolicy", POLICY.format(who="external"))
    builtin = types.ModuleType("rladapt_test_builtin_policy")
    exec(POLICY.format(who="builtin") + TOY, builtin.__dict__)
    monkeypatch.setitem(sys.modules, builtin.__name__, builtin)
    reg = load_registry(builtins={"builtin": builtin.__name__})
    assert reg.plugins.index("extpolicy") < reg.plugins.index("builtin") and reg.plugins[-1] == "builtin"
    with pytest.raises(SpecError) as info:
        render_native(JOB, "toy", reg)
    assert [p.message for p in info.value.problems if p.message in {"builtin", "external"}] == [
        "builtin",
        "external",
    ]
    native = reg.chain("rladapt_modify_native", _native(), job=JOB)
    assert native.env["ORDER"] == "builtin,external,"


def test_load_order_with_the_real_builtins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an external plugin registering a built-in's name: the conflict lists owners in call order
    _install_external(
        tmp_path,
        monkeypatch,
        "extverl",
        "from rladapt.plugins import hookimpl\n"
        "from rladapt.adapters.verl import VerlAdapter\n"
        "@hookimpl\ndef rladapt_register_frameworks():\n    return [VerlAdapter()]\n",
    )
    reg = load_registry(builtins={"verl": "rladapt.adapters.verl"})
    assert reg.conflicts[("framework", "verl")] == ["verl", "extverl"]


def _native() -> NativeLaunch:
    return render_native(JOB, "toy", registry()).native


def test_trace_env_prints_every_hook_call_with_plugin_and_outcome(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(TRACE_ENV, "1")

    def bad(native: NativeLaunch) -> NativeLaunch:
        raise KeyError("x")

    reg = registry(("pol", plugin(rladapt_modify_native=bad)))
    with pytest.raises(PluginError):
        render_native(JOB, "toy", reg)
    err = capsys.readouterr().err.splitlines()
    assert "rladapt: hook rladapt_register_frameworks [toy] -> ok" in err
    assert "rladapt: hook rladapt_modify_native [pol] -> raised KeyError: 'x'" in err


def test_checks_still_collect_from_every_plugin() -> None:
    one = plugin(rladapt_add_checks=lambda: [Problem("a", "one")])
    two = plugin(rladapt_add_checks=lambda job, native: [Problem("b", "two")])
    with pytest.raises(SpecError) as info:
        render_native(load_job_text(MINIMAL, []), "toy", registry(("one", one), ("two", two)))
    assert sorted(p.message for p in info.value.problems) == ["one", "two"]
