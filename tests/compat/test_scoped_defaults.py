"""A snapshot keeps each config's own default of a key where it differs from the first config's."""

from __future__ import annotations

from rladapt.compat.schema._format import KeySpec, Snapshot, merge_scopes


def test_merge_keeps_the_defaults_that_differ_and_the_file_round_trips() -> None:
    per_scope = [
        ("base", {"a.strategy": KeySpec(type="str", default="fsdp"), "a.n": KeySpec(type="int", default=1)}),
        (
            "engine",
            {"a.strategy": KeySpec(type="str", default="megatron"), "a.n": KeySpec(type="int", default=1)},
        ),
        (
            "other",
            {"a.strategy": KeySpec(type="str", default="fsdp"), "a.n": KeySpec(type="int", default=True)},
        ),
    ]
    scopes, keys = merge_scopes(per_scope, scoped_defaults=True)
    assert keys["a.strategy"].scoped_defaults == ((1, "megatron"),)
    assert keys["a.n"].scoped_defaults == ((2, True),)  # True is not 1 in a config file
    snap = Snapshot(framework="f", version="1", source="s", scopes=scopes, keys=keys)
    read = Snapshot.from_text(snap.to_text(), "test")
    assert read.to_text() == snap.to_text()
    assert [read.default("a.strategy", s) for s in (None, "base", "engine", "other", "elsewhere")] == [
        "fsdp",
        "fsdp",
        "megatron",
        "fsdp",
        "fsdp",
    ]


def test_without_scoped_defaults_the_first_config_wins() -> None:
    per_scope = [("base", {"k": KeySpec(default=1)}), ("other", {"k": KeySpec(default=2)})]
    _, keys = merge_scopes(per_scope)
    assert keys["k"].scoped_defaults == () and "default_in" not in keys["k"].to_json()
