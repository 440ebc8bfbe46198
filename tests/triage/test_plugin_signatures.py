"""A plugin adds a failure signature through ``rladapt_register_signatures``, and the host collects it."""

from __future__ import annotations

import pytest

from rladapt.plugins import hookimpl
from rladapt.plugins._manager import load_registry
from rladapt.plugins.testing import check_signature
from rladapt.triage import BUILTIN, Signature, triage

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
    registry = load_registry(builtins={}, extra=[("acme", QuotaPlugin())], use_entry_points=False)
    table = registry.signatures()
    assert table["acme-quota"].plugin == "acme" and table["acme-quota"].obj is QUOTA
    assert all(table[s.id].plugin == "rladapt" for s in BUILTIN)
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
        builtins={}, extra=[("clash", ClashingPlugin()), ("bad", BrokenPlugin())], use_entry_points=False
    )
    table = registry.signatures()
    assert table["cuda-oom"].plugin == "rladapt"  # the built-in entry stays; the id is marked as conflicting
    assert registry.conflicts[("signature", "cuda-oom")] == ["rladapt", "clash"]
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
        "signature 'cuda-oom': registered by more than one plugin: rladapt, clash"
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
