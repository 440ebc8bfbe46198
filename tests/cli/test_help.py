"""The CLI reads like one: ``rladapt --help`` in sections, one ``--format`` option (``--json`` a hidden alias where it
was the option), ``RUN`` as the run argument of every verb, and the maintainer verbs under ``matrix``."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from rladapt.cli import LAZY_VERBS, SECTIONS, _LazyGroup, cli, main
from rladapt.runs import RunStore
from tests.test_runs import finished

#: The verbs that print data, each with the formats it prints (the first is the default).
DATA_VERBS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("render",): ("text", "json"),
    ("plugins",): ("text", "json"),
    ("status",): ("text", "json"),
    ("runs",): ("table", "json"),
    ("checkpoints",): ("text", "json"),
    ("metrics",): ("table", "json", "csv"),
    ("compare",): ("table", "json", "csv"),
    ("triage",): ("text", "json"),
    ("diff",): ("text", "json"),
    ("eval",): ("text", "json"),
    ("upgrade",): ("text", "json"),
    ("matrix", "onboard"): ("text", "json"),
    ("matrix", "outdated"): ("text", "json"),
}
#: The verbs that said ``--json`` before they had ``--format``.
JSON_ALIAS = (("status",), ("runs",))
FRAMEWORKS = ("verl", "OpenRLHF", "NeMo-RL", "TRL")


def _help(group: click.Command = cli) -> str:
    res = CliRunner().invoke(group, ["--help"], prog_name="rladapt", terminal_width=110)
    assert res.exit_code == 0, res.output
    return res.output


def _sections(text: str) -> dict[str, list[str]]:
    """Heading -> the verbs listed under it (the first word of each indented row), Options left out."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line and not line[0].isspace() and line.endswith(":") and not line.startswith("Usage"):
            current = None if line == "Options:" else out.setdefault(line[:-1], [])
        elif current is not None and line.startswith("  ") and not line.startswith("   "):
            current.append(line.split()[0])
    return out


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    with click.Context(cli) as ctx:
        for name in path:
            assert isinstance(command, click.Group)
            found = command.get_command(ctx, name)
            assert found is not None, path
            command = found
    return command


def _every_command() -> dict[tuple[str, ...], click.Command]:
    out: dict[tuple[str, ...], click.Command] = {}
    with click.Context(cli) as ctx:
        for name in cli.list_commands(ctx):
            command = cli.get_command(ctx, name)
            assert command is not None
            out[(name,)] = command
            if isinstance(command, click.Group):
                for sub in command.list_commands(ctx):
                    found = command.get_command(ctx, sub)
                    assert found is not None
                    out[(name, sub)] = found
    return out


def test_help_lists_every_verb_in_exactly_one_section_in_the_tables_order() -> None:
    sections = _sections(_help())
    assert list(sections) == list(SECTIONS)  # nothing left over for "Other commands"
    listed = [verb for verbs in sections.values() for verb in verbs]
    visible = [path[0] for path, command in _every_command().items() if len(path) == 1 and not command.hidden]
    assert sorted(listed) == sorted(visible) == sorted(LAZY_VERBS)  # each once
    for title, verbs in SECTIONS.items():
        assert sections[title] == list(verbs)


def test_the_sections_are_the_issues() -> None:
    names = [title.split()[0] for title in SECTIONS]
    assert names == ["Spec", "Runs", "Results", "Pool", "Migration", "Environment", "Maintainers"]
    assert SECTIONS["Maintainers (the compatibility matrix and its snapshots)"] == {"matrix": "compat"}


def test_help_names_all_four_frameworks() -> None:
    text = _help()
    assert "verl, OpenRLHF, NeMo-RL or TRL" in " ".join(text.split())
    for framework in FRAMEWORKS:
        assert framework in text


def test_a_verb_no_section_names_is_listed_under_other_commands_and_a_hidden_one_not_at_all() -> None:
    group = _LazyGroup(name="rladapt")

    @group.command()
    def extra() -> None:
        """A verb a module registered eagerly."""

    @group.command(hidden=True)
    def secret() -> None:
        """Not advertised."""

    sections = _sections(_help(group))
    assert sections["Other commands"] == ["extra"]
    assert "secret" not in _help(group)
    assert list(sections)[:-1] == list(SECTIONS)


def test_the_help_columns_line_up_across_sections() -> None:
    text = _help()
    starts = set()
    for line in text.splitlines():
        words = line.split()
        if line.startswith("  ") and not line.startswith("   ") and words and words[0] in LAZY_VERBS:
            starts.add(line.index(words[1], len(words[0]) + 2))
    assert len(starts) == 1, starts


@pytest.mark.parametrize("path", list(DATA_VERBS), ids=" ".join)
def test_every_verb_that_prints_data_has_one_format_option(path: tuple[str, ...]) -> None:
    command = _command(path)
    (option,) = [p for p in command.params if isinstance(p, click.Option) and "--format" in p.opts]
    assert option.name == "fmt"
    assert isinstance(option.type, click.Choice)
    assert tuple(option.type.choices) == DATA_VERBS[path]
    assert option.default == DATA_VERBS[path][0]


def test_no_verb_shows_a_json_flag_and_only_the_old_ones_take_it() -> None:
    for path, command in _every_command().items():
        flags = [p for p in command.params if isinstance(p, click.Option) and "--json" in p.opts]
        if path in JSON_ALIAS:
            (flag,) = flags
            assert flag.hidden, path
        else:
            assert flags == [], path
        with click.Context(command, info_name=" ".join(path)) as ctx:
            assert "--json" not in command.get_help(ctx), path


def test_the_run_argument_is_run_everywhere() -> None:
    takes_a_run = set()
    for path, command in _every_command().items():
        with click.Context(command, info_name=" ".join(path)) as ctx:
            text = command.get_help(ctx)
        assert "RUN_ID" not in text, path
        for param in command.params:
            if isinstance(param, click.Argument) and param.name == "run_id":
                takes_a_run.add(path[0])
                assert param.make_metavar(ctx) == ("RUN" if param.required else "[RUN]"), path
                assert "RUN" in text.splitlines()[0], path
    assert takes_a_run == {"status", "logs", "stop", "watch", "metrics", "resume", "eval"}


def cli_run(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The CLI in this process, with main()'s exit-code policy."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("RLADAPT_HOME", str(tmp_path / "home"))
    finished(RunStore(), "alias-00000001")
    return "alias-00000001"


@pytest.mark.parametrize("verb", [("status", "alias"), ("runs",)], ids=lambda v: v[0])
def test_json_is_format_json(verb: tuple[str, ...], a_run: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, by_format, err = cli_run(*verb, "--format", "json", capsys=capsys)
    assert code == 0, err
    code, by_alias, err = cli_run(*verb, "--json", capsys=capsys)
    assert code == 0, err
    assert by_alias == by_format
    documents = (
        [json.loads(line) for line in by_format.splitlines()]
        if verb == ("runs",)
        else [json.loads(by_format)]
    )
    assert [d["id"] for d in documents] == [a_run]
    code, both, err = cli_run(*verb, "--json", "--format", "json", capsys=capsys)
    assert (code, both) == (0, by_format), err


@pytest.mark.parametrize("verb", [("status",), ("runs",)], ids=lambda v: v[0])
def test_json_and_another_format_is_a_usage_error(
    verb: tuple[str, ...], a_run: str, capsys: pytest.CaptureFixture[str]
) -> None:
    other = "text" if verb == ("status",) else "table"
    for args in (("--json", "--format", other), ("--format", other, "--json")):
        code, out, err = cli_run(*verb, *args, capsys=capsys)
        assert (code, out) == (2, ""), err
        assert err == f"error: --json is --format json: it contradicts --format {other}\n"


def test_the_default_format_is_unchanged(a_run: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli_run("status", a_run, capsys=capsys)
    assert code == 0 and out.startswith(f"run:       {a_run}\n")
    code, out, _ = cli_run("runs", capsys=capsys)
    assert code == 0 and out.split()[0] == "RUN"


def test_matrix_show_is_plain_matrix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, shown, err = cli_run("matrix", "show", capsys=capsys)
    assert code == 0 and shown.startswith("<!-- generated by `rladapt matrix show --write`"), err
    assert cli_run("matrix", capsys=capsys) == (0, shown, "")
    code, verl, err = cli_run("matrix", "show", "-f", "verl", capsys=capsys)
    assert code == 0 and "\n## verl\n" in verl and "\n## openrlhf\n" not in verl, err
    assert cli_run("matrix", "-f", "verl", capsys=capsys) == (0, verl, "")
    for args in (("matrix", "show", "--write"), ("matrix", "--write")):
        target = tmp_path / f"{len(args)}.md"
        assert cli_run(*args, str(target), capsys=capsys) == (0, "", "")
        assert target.read_text(encoding="utf-8") == shown


def test_matrix_help_lists_its_verbs_not_the_show_options() -> None:
    text = _help(_command(("matrix",)))
    assert _sections(text)["Commands"] == ["onboard", "outdated", "show", "snapshot"]
    assert "--write" not in text


def test_show_options_before_another_matrix_verb_are_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = cli_run("matrix", "--write", "x.md", "outdated", capsys=capsys)
    assert (code, out) == (2, "")
    assert err == (
        "error: --framework and --write are options of `rladapt matrix show`, not of `rladapt matrix outdated`: "
        "give them after the command\n"
    )


def test_every_verb_says_what_it_does_in_one_untruncated_line() -> None:
    for path, command in _every_command().items():
        short = command.get_short_help_str(limit=60)
        assert command.short_help == short and not short.endswith("..."), path
