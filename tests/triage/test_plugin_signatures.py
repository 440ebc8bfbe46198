"""A plugin adds a failure signature through ``rladapt_register_signatures``, and the host collects it; the built-in
catalogue is the built-in plugin ``triage``'s, loaded only when the signatures are collected."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rladapt.triage
from rladapt.plugins import BUILTIN_PLUGINS, Signature, hookimpl, load_registry
from rladapt.plugins.testing import check_signature
from rladapt.triage import triage
from rladapt.triage.catalogue import BUILTIN

#: Only the built-in catalogue's plugin: the adapters and launchers are not needed to collect signatures.
CATALOGUE = {"triage": BUILTIN_PLUGINS["triage"]}

#: An org's own failure: the message its storage client prints (the text is the plugin's to cite).
QUOTA = Signature(
    id="acme-quota",
    patterns=(r"ACME-FS: quota exceeded for project (?P<project>\S+)",),
    cause="The project's shared-filesystem quota is used up.",
    fix="Ask storage for more quota, or point spec.checkpoint.dir at scratch.",
    source="acme-fs client 3.2, fs/errors.go",
)


class QuotaPlugin:
    @hookimpl
    def rladapt_register_signatures(self) -> list[Signature]:
        return [QUOTA]


class ClashingPlugin:
    @hookimpl
    def rladapt_register_signatures(self) -> list[Signature]:
        return [Signature(id="cuda-oom", patterns=("OOM",), cause="c", fix="f", source="s")]


class BrokenPlugin:
    @hookimpl
    def rladapt_register_signatures(self) -> list[object]:
        return ["not a signature"]


def test_a_plugin_signature_joins_the_catalogue_and_matches() -> None:
    registry = load_registry(builtins=CATALOGUE, extra=[("acme", QuotaPlugin())], use_entry_points=False)
    table = registry.signatures()
    assert table["acme-quota"].plugin == "acme" and table["acme-quota"].obj is QUOTA
    assert all(table[s.id].plugin == "triage" for s in BUILTIN)
    assert list(table)[: len(BUILTIN)] == [s.id for s in BUILTIN]  # the built-in catalogue comes first
    found = triage(
        ["saving step 10", "OSError: ACME-FS: quota exceeded for project rl-42"],
        [r.obj for r in table.values()],
        None,
        None,
    )
    assert [m.signature for m in found] == ["acme-quota"]
    assert found[0].evidence == ("OSError: ACME-FS: quota exceeded for project rl-42",)


def test_a_clashing_id_is_a_conflict_and_a_wrong_result_a_broken_plugin() -> None:
    registry = load_registry(
        builtins=CATALOGUE,
        extra=[("clash", ClashingPlugin()), ("bad", BrokenPlugin())],
        use_entry_points=False,
    )
    table = registry.signatures()
    assert table["cuda-oom"].plugin == "triage"  # the built-in entry stays; the id is marked as conflicting
    assert registry.conflicts[("signature", "cuda-oom")] == ["triage", "clash"]
    assert [b.name for b in registry.broken] == ["bad"]
    assert "expected a Signature" in registry.broken[0].error


def test_a_signature_with_a_broken_pattern_fails_where_it_is_declared() -> None:
    with pytest.raises(ValueError, match="is not a regex"):
        Signature(id="x", patterns=("(unclosed",), cause="c", fix="f", source="s")


def test_the_kit_checks_a_signature_against_its_example_and_the_registry() -> None:
    registry = load_registry(
        extra=[("acme", QuotaPlugin()), ("clash", ClashingPlugin())], use_entry_points=False
    )
    assert check_signature(QUOTA, ["OSError: ACME-FS: quota exceeded for project rl-42"], registry) == []
    failures = check_signature(QUOTA, ["OSError: ACME-FS: disk quota reached"], registry)
    assert failures == [
        "signature 'acme-quota': does not match its example 'OSError: ACME-FS: disk quota reached'"
    ]
    clash = registry.signatures()["cuda-oom"].obj
    example = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    assert check_signature(clash, [example], registry) == [
        "signature 'cuda-oom': registered by more than one plugin: triage, clash"
    ]
    never = Signature(
        id="verl-only-old",
        patterns=("x",),
        cause="c",
        fix="f",
        source="",
        frameworks=("verl",),
        versions="<0.1",
    )
    failures = check_signature(never, ["x"], registry)
    assert "signature 'verl-only-old': source is empty: cite where the message text comes from" in failures
    assert any("matches none of verl's declared versions" in f for f in failures)


def test_the_catalogue_is_loaded_when_signatures_are_collected_not_with_the_registry() -> None:
    """A render loads the registry, and with it the built-in plugin ``triage``: that must not import the catalogue."""
    probe = (
        "import sys\n"
        "from rladapt.plugins import load_registry\n"
        "registry = load_registry(use_entry_points=False)\n"
        "assert 'triage' in registry.plugins, registry.plugins\n"
        "print('rladapt.triage.catalogue' in sys.modules)\n"
        "registry.signatures()\n"
        "print('rladapt.triage.catalogue' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_blocking_the_triage_plugin_empties_the_built_in_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLADAPT_BLOCK_PLUGINS", "triage")
    registry = load_registry(builtins=CATALOGUE, extra=[("acme", QuotaPlugin())], use_entry_points=False)
    assert registry.blocked == ["triage"]
    assert list(registry.signatures()) == ["acme-quota"]


def test_the_old_names_still_import() -> None:
    """``rladapt.triage.Signature`` and ``rladapt.triage.BUILTIN`` keep working for existing imports."""
    from rladapt.triage.signature import Signature as OldSignature

    assert rladapt.triage.Signature is Signature is OldSignature
    assert rladapt.triage.BUILTIN is BUILTIN
