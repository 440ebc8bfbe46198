"""The shell-script reader: the one launch command of a script as teams write them, with its words resolved.

A launch script is bash, and the part a migration needs is what the script's own defaults decide. The reader parses
the script (``\\`` continuations, quoting, comments, heredocs skipped) into commands, ``if``/``case``/``for``/
``while`` blocks, ``{ }``/``( )`` groups and functions, then runs it in a model of bash that executes nothing:
variables (``X=1``, ``export``/``declare``/``local``/``readonly``), ``${VAR:-default}`` and its siblings
(``#``/``%`` trimming, ``/`` replacement, ``,,``/``^^`` case, ``:off:len``), arrays (empty ones, ``+=``),
``$((...))``, functions called before the launch (their arguments as ``$1``...), conditions it can decide
(``[ "$X" = y ]``, ``[[ ... == ... ]]``, ``-z``/``-n``, numeric ``-eq``..., ``!``, ``&&``/``||``) and command
substitutions made of pure shell (``$(cd "$(dirname "$0")" && pwd)``, ``$(basename ...)``, ``$(pwd)``, ``echo``),
files it sources (read where they are) and scripts given to ``bash -c "..."`` (``srun``, ``ray job submit``).

What only running the script can tell (a variable of the caller's environment, another program's output, a condition
on either, a file test) is not guessed: a branch that cannot be decided is followed both ways, and a variable whose
value then depends on it, when the launch reads it, is a ``UsageError`` naming the variable, the line it is set on and
the root it depends on, unless the user gives it (``--set VAR=VALUE``, ``--set 'VAR=(a b)'`` for an array,
``--unset VAR`` for a variable the caller does not set, ``--set 1=VALUE`` for the script's own arguments). A launch line that exists is never "not found": one the
script does not reach with the values given is named with why.

Why a tokenizer of our own rather than ``shlex.split``: shlex strips quotes before expansion could see them, so it
cannot tell ``'$X'`` (literal) from ``"$X"`` (one word) from ``$X`` (split into words), which bash treats three
ways. Words are still split the way shlex's POSIX mode does (``shlex.quote`` round-trips through this reader).
"""

from __future__ import annotations

import ast
import contextlib
import fnmatch
import operator
import os
import posixpath
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rladapt.primitives.errors import UsageError, quote

#: Where the framework's arguments start in a command's words (None: not the launch looked for).
Matcher = Callable[[list[str]], "int | None"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")
#: Words that end a list of commands (the parser's stops); a stray one (an unbalanced script) is skipped.
_CLOSERS = {"then", "elif", "else", "fi", "do", "done", "esac", "}", "in"}
_DECLARE = {"export", "declare", "local", "readonly", "typeset"}
_SPECIAL = set("@*#?$!-0123456789")


@dataclass(frozen=True)
class Part:
    """A piece of a raw word: ``lit`` (unquoted), ``sq`` (single-quoted) or ``dq`` (double-quoted)."""

    kind: str
    text: str


RawWord = tuple[Part, ...]


@dataclass(frozen=True)
class _Pending:
    """A variable the reader cannot know: set (at ``line``) from what only running the script tells.

    ``root`` is what it depends on in the end (a variable of the caller's environment, a command substitution, the
    variable itself when branches that cannot be decided set it differently), ``why`` says why that is unknown, and
    ``via`` the variables between this one and the root, each with the line it is set on."""

    line: int
    why: str
    root: str
    via: tuple[tuple[str, int], ...] = ()


Value = str | list[str] | _Pending


@dataclass(frozen=True)
class Launch:
    """The launch command found in a script: its words, where it starts, and the environment it gets."""

    source: str
    line: int
    argv: tuple[str, ...]
    start: int  # argv[start:] are the framework's arguments
    env: dict[str, str] = field(default_factory=dict)

    @property
    def prefix(self) -> tuple[str, ...]:
        return self.argv[: self.start]

    @property
    def args(self) -> tuple[str, ...]:
        return self.argv[self.start :]


class _Unresolved(Exception):
    """A value only running the script can tell: ``root`` and why, through the variables of ``trail`` (outermost
    first, each with the line it is set on)."""

    def __init__(self, root: str, why: str, trail: tuple[tuple[str, int], ...] = ()) -> None:
        super().__init__(root)
        self.root = root
        self.why = why
        self.trail = trail

    @property
    def name(self) -> str:
        """The name a user gives with ``--set``: the first variable read, or the root itself."""
        return self.trail[0][0] if self.trail else self.root

    def chain(self) -> str:
        """``A (line 5) <- B (line 3) <- ROOT``: where each variable on the way is set."""
        steps = [f"{name} (set on line {line})" for name, line in self.trail]
        if not self.trail or self.trail[-1][0] != self.root:
            steps.append(f"${self.root}" if self.root.isdigit() else self.root)
        return " <- ".join(steps)

    def describe(self) -> str:
        return f"{self.chain()}: {self.why}"


# --- lines -----------------------------------------------------------------------------------------------------


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each logical line: continuations joined, open quotes and ``(`` carried on."""
    out: list[tuple[int, str]] = []
    buf = ""
    start = 0
    heredoc: str | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        if heredoc is not None:  # a heredoc's lines are input to a command, not commands
            if raw.strip() == heredoc:
                heredoc = None
            continue
        if not buf:
            start = number
        m = _HEREDOC.search(raw)
        if m is not None and raw.count("'", 0, m.start()) % 2 == 0 and raw.count('"', 0, m.start()) % 2 == 0:
            heredoc = m.group(2)
        if raw.endswith("\\") and not raw.endswith("\\\\"):
            buf += raw[:-1]
            continue
        buf += raw
        if _open(buf):
            buf += "\n"
            continue
        out.append((start, buf))
        buf = ""
    if buf:
        out.append((start, buf))
    return out


_HEREDOC = re.compile(r"(?<!<)<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def _open(text: str) -> bool:
    """Whether ``text`` ends inside a quote or an unclosed ``(`` (an array spread over several lines)."""
    quote_char: str | None = None
    depth = 0
    i = 0
    word_start = True
    while i < len(text):
        ch = text[i]
        if quote_char == "'":
            if ch == "'":
                quote_char = None
        elif quote_char == '"':
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote_char = None
        elif ch == "\\":
            i += 1
        elif ch in "'\"":
            quote_char = ch
        elif ch == "#" and word_start:
            nl = text.find("\n", i)
            if nl < 0:
                break
            i = nl
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)  # a case pattern's ``x)`` opens nothing
        word_start = ch in " \t\n;(|&" and quote_char is None
        i += 1
    return quote_char is not None or depth > 0


# --- words -----------------------------------------------------------------------------------------------------


Token = RawWord | str  # a word, or an operator: ; && || | & ;; ( ) () and a newline


def _split(text: str, line: int, source: str) -> list[list[Token]]:
    """Commands of one logical line, each a list of raw words (or ``(`` / ``)``), cut at the separators."""
    commands: list[list[Token]] = [[]]
    for token in _lex(text, line, source):
        if token in _SEPARATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


_SEPARATORS = {";", "&&", "||", "|", "&", ";;", "\n"}


def _lex(text: str, line: int, source: str) -> list[Token]:
    """The tokens of one logical line: raw words and operators; redirections are dropped with their target."""
    words: list[Token] = []
    parts: list[Part] = []
    cur = ""
    kind = "lit"
    in_word = False
    i = 0
    n = len(text)

    def flush_part() -> None:
        nonlocal cur
        if cur or kind != "lit":
            parts.append(Part(kind, cur))
        cur = ""

    def end_word() -> None:
        nonlocal in_word
        flush_part()
        if in_word:
            words.append(tuple(parts))
        parts.clear()
        in_word = False

    while i < n:
        ch = text[i]
        if ch in " \t\n":
            end_word()
            i += 1
            continue
        if ch == "#" and not in_word:
            nl = text.find("\n", i)
            if nl < 0:
                break
            i = nl
            continue
        if ch in ";&|":
            end_word()
            op = text[i : i + 2] if text[i : i + 2] in ("&&", "||", ";;") else ch
            i += len(op)
            if ch == "&" and i < n and text[i] == ">":  # &> file
                i = _skip_target(text, i + 1)
                continue
            if op == "|" and i < n and text[i] == "&":  # |& : a pipe of stderr too
                i += 1
            words.append(op)
            continue
        if ch in "<>":
            # a redirection: a file-descriptor number just before it (2>&1) belongs to it, then its target
            if in_word and not parts and cur.isdigit():
                cur = ""
                in_word = False
            else:
                end_word()
            j = i + 1
            while j < n and text[j] in "<>":
                j += 1
            if j < n and text[j] == "&":
                j += 1
                if j < n and (text[j].isdigit() or text[j] == "-"):
                    i = j + 1
                    continue
            i = _skip_target(text, j)
            continue
        if ch == "(" and in_word and not parts and _NAME.fullmatch(cur) and text[i + 1 : i + 2] == ")":
            end_word()  # name() : a function definition
            words.append("()")
            i += 2
            continue
        if ch == "(" and in_word and not parts and _ASSIGN.fullmatch(cur):
            end_word()
            words.append(ch)
            i += 1
            continue
        if ch in "()" and not in_word:
            words.append(ch)
            i += 1
            continue
        if ch == ")" and in_word and not _inside_dollar(cur):
            end_word()
            words.append(ch)
            i += 1
            continue
        in_word = True
        if ch == "'":
            flush_part()
            j = text.find("'", i + 1)
            if j < 0:
                raise UsageError(f"{source}:{line}: unterminated ' quote")
            parts.append(Part("sq", text[i + 1 : j]))
            i = j + 1
            continue
        if ch == '"':
            flush_part()
            j = i + 1
            buf = ""
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n and text[j + 1] in '"\\$`\n':
                    buf += text[j : j + 2] if text[j + 1] in "$`" else text[j + 1]
                    j += 2
                    continue
                if text[j] == "$" and text[j + 1 : j + 2] in ("(", "{"):
                    end = _matching(text, j + 1)
                    if end < 0:
                        raise UsageError(f"{source}:{line}: unterminated {text[j : j + 2]}")
                    buf += text[j : end + 1]
                    j = end + 1
                    continue
                buf += text[j]
                j += 1
            if j >= n:
                raise UsageError(f'{source}:{line}: unterminated " quote')
            parts.append(Part("dq", buf))
            i = j + 1
            continue
        if ch == "\\":
            flush_part()
            if i + 1 < n:
                parts.append(Part("sq", text[i + 1]))
            i += 2
            continue
        if ch == "$" and text[i + 1 : i + 2] in ("(", "{"):
            end = _matching(text, i + 1)
            if end < 0:
                raise UsageError(f"{source}:{line}: unterminated {text[i : i + 2]}")
            cur += text[i : end + 1]
            i = end + 1
            continue
        if ch == "`":
            j = text.find("`", i + 1)
            cur += text[i : (j + 1 if j > 0 else n)]
            i = j + 1 if j > 0 else n
            continue
        cur += ch
        i += 1
    end_word()
    return words


def _inside_dollar(cur: str) -> bool:
    return cur.count("$(") > cur.count(")")


def _skip_target(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in " \t":
        i += 1
    quote_char: str | None = None
    while i < n:
        ch = text[i]
        if quote_char:
            if ch == quote_char:
                quote_char = None
        elif ch in "'\"":
            quote_char = ch
        elif ch in " \t\n;&|":
            break
        i += 1
    return i


def _matching(text: str, i: int) -> int:
    """Index of the bracket closing the one at ``i`` (``(`` or ``{``), quotes respected; -1 when none."""
    pairs = {"(": ")", "{": "}"}
    stack = [pairs[text[i]]]
    j = i + 1
    quote_char: str | None = None
    while j < len(text):
        ch = text[j]
        if quote_char:
            if ch == quote_char:
                quote_char = None
        elif ch in "'\"":
            quote_char = ch
        elif ch == "\\":
            j += 1
        elif ch in pairs:
            stack.append(pairs[ch])
        elif ch == stack[-1]:
            stack.pop()
            if not stack:
                return j
        j += 1
    return -1


# --- expansion -------------------------------------------------------------------------------------------------


_ENVIRONMENT = "not set in the script, so it comes from the caller's environment"
_ARGUMENT = "an argument of the script, and a launch script is read with none"


@dataclass
class _Shell:
    """The state of the modelled shell: variables, exports, functions, positional arguments, directory."""

    source: str
    sets: Mapping[str, Value]
    unset: frozenset[str] = frozenset()
    cwd: str = "."
    match: Matcher | None = None
    vars: dict[str, Value] = field(default_factory=dict)
    exported: dict[str, None] = field(default_factory=dict)  # ordered set
    funcs: dict[str, _Func] = field(default_factory=dict)
    positional: list[str] = field(default_factory=list)  # a launch script runs with no arguments
    lenient: bool = False  # unknown values read as empty: only to recognise the launch line
    out: list[str] | None = None  # inside a command substitution: what it prints
    why: str = ""  # why the last status was unknown
    exited: int = 0  # the line of an ``exit`` that ended the run (0: none)
    depth: int = 0  # function calls and substitutions under way (a bound against recursion)
    returned: str = ""  # why the function under way may have returned already (a branch not decided returned)
    called: bool = False  # in a function or a bash -c: $1... are the ones given (the script's own: none)
    sourced: tuple[str, ...] = ()  # files sourced but not read: a variable nobody set may come from them
    frames: list[dict[str, Value | None]] = field(default_factory=list)  # per call: the values ``local`` hid
    where: dict[str, int] = field(default_factory=dict)  # the line each variable was last set on

    def clone(self, **changes: Any) -> _Shell:
        """A copy to follow one path on (a branch, a subshell, a command substitution): its own mutable state."""
        own: dict[str, Any] = {
            "vars": dict(self.vars),
            "exported": dict(self.exported),
            "funcs": dict(self.funcs),
            "positional": list(self.positional),
            "out": list(self.out) if self.out is not None else None,
            "frames": [dict(frame) for frame in self.frames],
            "where": dict(self.where),
        }
        return replace(self, **{**own, **changes})

    def lookup(self, name: str) -> Value | None:
        if name in self.sets:
            return self.sets[name]
        if name in ("@", "*"):
            return list(self.positional)
        if name == "#":
            return str(len(self.positional))
        if name == "0":
            return self.source
        if name.isdigit():
            index = int(name)
            return self.positional[index - 1] if 0 < index <= len(self.positional) else None
        if name in self.vars:
            return self.vars[name]
        if name == "BASH_SOURCE":
            return [self.source]
        if name == "PWD":  # bash sets it itself
            return self.cwd
        return None

    def is_known_unset(self, name: str) -> bool:
        """Whether an unset ``name`` is really unset (not the caller's environment, which only running tells)."""
        if name.isdigit() and name != "0":
            # a launch script is read with no arguments: one it needs ($1 with no default) is not guessed empty
            return self.called or self.lenient
        return name in self.unset or name in _SPECIAL or self.lenient

    def scalar(self, name: str) -> str | None:
        value = self.lookup(name)
        if isinstance(value, _Pending):
            if self.lenient:
                return ""
            raise _Unresolved(value.root, value.why, ((name, value.line), *value.via))
        if isinstance(value, list):
            return value[0] if value else ""
        return value

    def items(self, name: str) -> list[str]:
        """The elements of array ``name`` (a scalar is a one-element array; unset, none)."""
        value = self.lookup(name)
        if isinstance(value, _Pending):
            if self.lenient:
                return []
            raise _Unresolved(value.root, value.why, ((name, value.line), *value.via))
        if value is None and not self.is_known_unset(name):
            raise _Unresolved(name, _ARGUMENT if name.isdigit() else self.environment())
        return value if isinstance(value, list) else ([] if value is None else [value])

    def assign(self, name: str, value: Value, append: bool = False) -> None:
        if name in self.sets:
            return  # given with --set: the user's value wins over the script's own
        old = self.vars.get(name)
        if append and isinstance(value, str) and isinstance(old, list):
            self.vars[name] = [*old, value]
        elif append and isinstance(value, list) and isinstance(old, list):
            self.vars[name] = [*old, *value]
        elif append and isinstance(value, str) and isinstance(old, str):
            self.vars[name] = old + value
        else:
            self.vars[name] = value

    def words(self, raw: RawWord) -> list[str]:
        """The words a raw word expands to (unquoted expansions are split on blanks, as bash does)."""
        fields: list[str] = []
        current: str | None = None  # None: no text yet (an empty unquoted expansion makes no word)
        for part in raw:
            if part.kind == "sq":
                current = (current or "") + part.text
                continue
            arrays = False
            for piece, splittable in self._pieces(part.text, quoted=part.kind == "dq"):
                if isinstance(piece, list):  # "${ARR[@]}": one word per element
                    arrays = True
                    if not piece:
                        continue
                    first, *rest = piece
                    current = (current or "") + first
                    for item in rest:
                        fields.append(current)
                        current = item
                    continue
                if not splittable:
                    current = (current or "") + piece
                    continue
                chunks = piece.split()
                if not chunks:
                    if piece and current is not None:
                        fields.append(current)
                        current = None
                    continue
                if piece[0].isspace() and current is not None:
                    fields.append(current)
                    current = None
                current = (current or "") + chunks[0]
                for chunk in chunks[1:]:
                    fields.append(current)
                    current = chunk
                if piece[-1].isspace():
                    fields.append(current)
                    current = None
            if part.kind == "dq" and current is None and not arrays:
                current = ""  # "" is an empty word; "${EMPTY[@]}" and "$@" are no word at all
        if current is not None:
            fields.append(current)
        return fields

    def string(self, raw: RawWord) -> str:
        """A raw word expanded without splitting (the right-hand side of an assignment)."""
        out = ""
        for part in raw:
            if part.kind == "sq":
                out += part.text
                continue
            for piece, _ in self._pieces(part.text, quoted=True):
                out += " ".join(piece) if isinstance(piece, list) else piece
        return out

    def _pieces(self, text: str, quoted: bool) -> list[tuple[str | list[str], bool]]:
        """``text`` cut into literal text and expansions; the flag says whether blanks in it split words."""
        out: list[tuple[str | list[str], bool]] = []
        lit = ""
        i = 0
        while i < len(text):
            ch = text[i]
            if ch == "\\" and quoted and text[i + 1 : i + 2] in ("$", "`"):
                lit += text[i + 1]
                i += 2
                continue
            if ch == "`" or (text.startswith("$(", i) and not text.startswith("$((", i)):
                end = text.find("`", i + 1) if ch == "`" else _matching(text, i + 1)
                end = end if end > 0 else len(text)
                if lit:
                    out.append((lit, False))
                    lit = ""
                code = text[i + 1 : end] if ch == "`" else text[i + 2 : end]
                out.append((self.substitute(code, text[i : end + 1]), not quoted))
                i = end + 1
                continue
            if ch != "$" or i + 1 >= len(text):
                lit += ch
                i += 1
                continue
            if lit:
                out.append((lit, False))
                lit = ""
            nxt = text[i + 1]
            if text.startswith("$((", i):
                end = _matching(text, i + 1)
                if end < 0 or text[end - 1] != ")":
                    raise _Unresolved(text[i:], "an unterminated $((...))")
                out.append((self._arith(text[i + 3 : end - 1]), False))
                i = end + 1
            elif nxt == "{":
                end = _matching(text, i + 1)
                out.append((self._braced(text[i + 2 : end], quoted), not quoted))
                i = end + 1
            elif nxt in _SPECIAL:
                if nxt in "@*":
                    out.append(
                        (list(self.positional), False)
                        if quoted and nxt == "@"
                        else (" ".join(self.positional), not quoted)
                    )
                elif nxt.isdigit() and nxt != "0":
                    out.append((self._required(nxt), not quoted))
                else:
                    out.append((self.scalar(nxt) or "", not quoted))
                i += 2
            else:
                m = _NAME.match(text, i + 1)
                if m is None:
                    lit += "$"
                    i += 1
                    continue
                out.append((self._required(m.group()), not quoted))
                i = m.end()
        if lit:
            out.append((lit, False))
        return out

    def substitute(self, code: str, whole: str) -> str:
        """What ``$(code)`` prints when it is pure shell (``cd``, ``pwd``, ``dirname``, ``echo``...)."""
        if self.lenient:
            return ""
        label = whole if len(whole) <= 60 else whole[:57] + "..."
        if self.depth > 20:
            raise _Unresolved(label, "a command substitution nested too deep")
        try:
            nodes = _parse(code, self.source, 0)
        except UsageError:
            raise _Unresolved(label, "a command substitution this reader cannot parse") from None
        sub = self.clone(out=[], match=None, depth=self.depth + 1)
        try:
            _run_list(nodes, sub)
        except _Unresolved as exc:
            if not exc.root or exc.root.startswith(("$(", "`")):
                raise _Unresolved(label, exc.why) from None
            raise  # a variable it reads: name that one
        except (_Exit, _Return, _Break):
            pass
        assert sub.out is not None
        return "".join(sub.out).rstrip("\n")

    def environment(self) -> str:
        """Why a variable the script does not set is unknown (and where else it may come from)."""
        if not self.sourced:
            return _ENVIRONMENT
        return f"{_ENVIRONMENT} or from {', '.join(self.sourced)}"

    def _required(self, name: str) -> str:
        value = self.scalar(name)
        if value is None:
            if self.is_known_unset(name):
                return ""
            raise _Unresolved(name, _ARGUMENT if name.isdigit() else self.environment())
        return value

    def _braced(self, body: str, quoted: bool) -> str | list[str]:
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\[([@*])\]", body)
        if m:
            items = self.items(m.group(1))
            if m.group(2) == "*" and quoted:
                return " ".join(items)
            return list(items) if quoted else " ".join(items)
        m = re.fullmatch(r"#([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]", body)
        if m:
            return str(len(self.items(m.group(1))))
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\[(\d+)\]", body)
        if m:
            items = self.items(m.group(1))
            index = int(m.group(2))
            return items[index] if index < len(items) else ""
        if body.startswith("#") and len(body) > 1:
            return str(len(self._required(body[1:])))
        m = re.fullmatch(
            r"([A-Za-z_][A-Za-z0-9_]*|[@*#0-9])(?:(:?[-=+?]|##?|%%?|//?|,,?|\^\^?|:)(.*))?", body, re.S
        )
        if m is None:
            raise _Unresolved("${" + body + "}", "an expansion this reader does not evaluate")
        name, op, word = m.group(1), m.group(2), m.group(3) or ""
        if op is None:
            return self._required(name)
        if name in "@*" and op == ":":  # "${@:2}": the arguments from the second on, each a word
            m = re.fullmatch(r"\s*(\d+)\s*(?::\s*(\d+)\s*)?", word)
            if m is None:
                raise _Unresolved("${" + body + "}", "an expansion this reader does not evaluate")
            start = max(int(m.group(1)) - 1, 0)
            part = self.positional[start:][: int(m.group(2))] if m.group(2) else self.positional[start:]
            return list(part) if quoted and name == "@" else " ".join(part)
        if op[0] in "#%/,^" or op == ":":
            return self._transform(name, op, word)
        value = self.scalar(name)  # unset here: the script's default applies (--set gives another)
        unset = value is None or (op.startswith(":") and value == "")
        sub = op[-1]
        if sub in "-=":
            if not unset:
                return str(value)
            result = self.string(_parts_of(word))
            if sub == "=":
                self.assign(name, result)
            return result
        if sub == "+":
            return "" if unset else self.string(_parts_of(word))
        if unset:  # ${VAR:?message}
            raise _Unresolved(name, "required by ${" + body + "} and not set in the script")
        return str(value)

    def _transform(self, name: str, op: str, word: str) -> str:
        """``${X#pat}`` ``${X%pat}`` (shortest/longest trim), ``${X/pat/rep}``, ``${X,,}`` ``${X^^}``, ``${X:o:n}``."""
        value = self._required(name)
        if op == ":":
            m = re.fullmatch(r"\s*(-?\d+)\s*(?::\s*(\d+)\s*)?", word)
            if m is None:
                raise _Unresolved(
                    "${" + name + ":" + word + "}", "an expansion this reader does not evaluate"
                )
            start = int(m.group(1))
            return value[start:][: int(m.group(2))] if m.group(2) else value[start:]
        if op[0] in ",^":
            return value.lower() if op[0] == "," else value.upper()
        if op[0] == "/":
            pattern, _, rep = word.partition("/")
            pattern, rep = self.string(_parts_of(pattern)), self.string(_parts_of(rep))
            regex = fnmatch.translate(pattern).removesuffix(r"\Z").removeprefix("(?s:").removesuffix(")")
            return re.sub(regex, rep.replace("\\", "\\\\"), value, count=0 if op == "//" else 1)
        pattern = self.string(_parts_of(word))
        cuts = range(len(value) + 1) if op in ("#", "%") else range(len(value), -1, -1)
        for k in cuts:
            if op[0] == "#" and fnmatch.fnmatchcase(value[:k], pattern):
                return value[k:]
            if op[0] == "%" and fnmatch.fnmatchcase(value[len(value) - k :], pattern):
                return value[: len(value) - k]
        return value

    def _arith(self, expr: str) -> str:
        def name(m: re.Match[str]) -> str:
            return self._required(m.group(1) or m.group(2)) or "0"

        text = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?|\b([A-Za-z_][A-Za-z0-9_]*)\b", name, expr)
        try:
            return str(_evaluate(ast.parse(text.strip(), mode="eval").body))
        except (SyntaxError, ValueError, ZeroDivisionError):
            raise _Unresolved("$((" + expr + "))", "arithmetic this reader does not evaluate") from None


_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.floordiv,  # bash arithmetic is integer
    ast.Mod: operator.mod,
}


def _evaluate(node: ast.expr) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand)
    raise ValueError("not integer arithmetic")


def _parts_of(text: str) -> RawWord:
    """The raw word of the text after ``:-`` in ``${VAR:-text}`` (it may hold quotes of its own)."""
    commands = _split(text, 0, "<expansion>")
    if not commands:
        return (Part("dq", text),)
    parts: list[Part] = []
    for i, word in enumerate(commands[0]):
        if i:
            parts.append(Part("sq", " "))
        parts.extend(word if isinstance(word, tuple) else (Part("sq", word),))
    return tuple(parts)


# --- the parse tree --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ArrayWord:
    """``NAME=( items )`` / ``NAME+=( items )`` in a command's words."""

    head: RawWord
    items: tuple[RawWord, ...]


@dataclass(frozen=True)
class _Simple:
    line: int
    words: tuple[RawWord | _ArrayWord, ...]


@dataclass(frozen=True)
class _AndOr:
    line: int
    first: Node
    rest: tuple[tuple[str, Node], ...]


@dataclass(frozen=True)
class _Pipe:
    line: int
    negate: bool
    commands: tuple[Node, ...]


@dataclass(frozen=True)
class _If:
    line: int
    arms: tuple[tuple[tuple[Node, ...], tuple[Node, ...]], ...]  # (condition, body) of if and each elif
    orelse: tuple[Node, ...] | None


@dataclass(frozen=True)
class _Case:
    line: int
    word: RawWord
    items: tuple[tuple[tuple[RawWord, ...], tuple[Node, ...]], ...]


@dataclass(frozen=True)
class _For:
    line: int
    name: str
    items: tuple[RawWord, ...] | None  # None: a C-style for (( ...; ...; ... )), whose count is not followed
    body: tuple[Node, ...]


@dataclass(frozen=True)
class _Loop:
    line: int
    cond: tuple[Node, ...]
    body: tuple[Node, ...]
    until: bool


@dataclass(frozen=True)
class _Group:
    line: int
    body: tuple[Node, ...]
    subshell: bool


@dataclass(frozen=True)
class _Func:
    line: int
    name: str
    body: Node


Node = _Simple | _AndOr | _Pipe | _If | _Case | _For | _Loop | _Group | _Func


def _lead(raw: Token | _ArrayWord | None) -> str:
    """The word's text when it is plain (unquoted, no expansion), else ''."""
    if not isinstance(raw, tuple) or len(raw) != 1 or raw[0].kind != "lit":
        return ""
    return raw[0].text


class _Parser:
    """Recursive descent over the tokens of a script: lists, and-or lists, pipelines, compound commands."""

    def __init__(self, tokens: list[tuple[Token, int]], source: str) -> None:
        self.tokens = tokens
        self.pos = 0
        self.source = source

    def peek(self, ahead: int = 0) -> Token | None:
        at = self.pos + ahead
        return self.tokens[at][0] if at < len(self.tokens) else None

    def line(self) -> int:
        return self.tokens[min(self.pos, len(self.tokens) - 1)][1] if self.tokens else 0

    def next(self) -> Token | None:
        token = self.peek()
        self.pos += 1
        return token

    def skip(self, *ops: str) -> None:
        while self.peek() in ops:
            self.pos += 1

    def expect(self, word: str) -> None:
        if _lead(self.peek()) != word:
            raise UsageError(
                f"{self.source}:{self.line()}: expected {word!r} (the script does not parse as bash)"
            )
        self.pos += 1

    def parse_list(self, stops: frozenset[str] = frozenset()) -> tuple[Node, ...]:
        body: list[Node] = []
        while True:
            self.skip(";", "\n", "&")
            token = self.peek()
            if token is None:
                return tuple(body)
            if stops and (token in (")", ";;") or _lead(token) in stops):
                return tuple(body)
            if token in (")", ";;", "()", "|", "&&", "||") or (not stops and _lead(token) in _CLOSERS):
                self.pos += 1  # a stray closer: an unbalanced script, read on
                continue
            body.append(self.parse_and_or())

    def parse_and_or(self) -> Node:
        line = self.line()
        first = self.parse_pipe()
        rest: list[tuple[str, Node]] = []
        while self.peek() in ("&&", "||"):
            op = str(self.next())
            self.skip("\n")
            rest.append((op, self.parse_pipe()))
        return _AndOr(line, first, tuple(rest)) if rest else first

    def parse_pipe(self) -> Node:
        line = self.line()
        negate = False
        while _lead(self.peek()) == "!":
            self.pos += 1
            negate = not negate
        commands = [self.parse_command()]
        while self.peek() == "|":
            self.pos += 1
            self.skip("\n")
            commands.append(self.parse_command())
        return _Pipe(line, negate, tuple(commands)) if negate or len(commands) > 1 else commands[0]

    def parse_command(self) -> Node:
        line = self.line()
        token = self.peek()
        word = _lead(token)
        if token == "(":
            self.pos += 1
            body = self.parse_list(frozenset({")"}))
            if self.peek() == ")":
                self.pos += 1
            return _Group(line, body, subshell=True)
        if word == "{":
            self.pos += 1
            body = self.parse_list(frozenset({"}"}))
            self.expect("}")
            return _Group(line, body, subshell=False)
        if word == "if":
            self.pos += 1
            arms = []
            orelse = None
            while True:
                cond = self.parse_list(frozenset({"then"}))
                self.expect("then")
                body = self.parse_list(frozenset({"elif", "else", "fi"}))
                arms.append((cond, body))
                if _lead(self.peek()) == "elif":
                    self.pos += 1
                    continue
                if _lead(self.peek()) == "else":
                    self.pos += 1
                    orelse = self.parse_list(frozenset({"fi"}))
                self.expect("fi")
                return _If(line, tuple(arms), orelse)
        if word in ("while", "until"):
            self.pos += 1
            cond = self.parse_list(frozenset({"do"}))
            self.expect("do")
            body = self.parse_list(frozenset({"done"}))
            self.expect("done")
            return _Loop(line, cond, body, until=word == "until")
        if word in ("for", "select"):
            self.pos += 1
            name = _lead(self.peek())
            items: tuple[RawWord, ...] | None = None
            if name:
                self.pos += 1
                self.skip("\n")
                items = ()
                if _lead(self.peek()) == "in":
                    self.pos += 1
                    collected = []
                    while isinstance(self.peek(), tuple):
                        collected.append(self.next())
                    items = tuple(w for w in collected if isinstance(w, tuple))
                else:
                    items = ((Part("dq", "$@"),),)
            while self.peek() is not None and _lead(self.peek()) != "do":
                self.pos += 1  # for (( ... )) ; and the separator before do
            self.expect("do")
            body = self.parse_list(frozenset({"done"}))
            self.expect("done")
            return _For(line, name, items, body)
        if word == "case":
            self.pos += 1
            subject = self.next()
            if not isinstance(subject, tuple):
                raise UsageError(f"{self.source}:{line}: expected a word after 'case'")
            self.skip("\n")
            self.expect("in")
            cases: list[tuple[tuple[RawWord, ...], tuple[Node, ...]]] = []
            while True:
                self.skip("\n", ";", ";;")
                if self.peek() is None or _lead(self.peek()) == "esac":
                    break
                if self.peek() == "(":
                    self.pos += 1
                patterns: list[RawWord] = []
                while True:
                    token = self.next()
                    if isinstance(token, tuple):
                        patterns.append(token)
                    if token == ")" or token is None:
                        break
                cases.append((tuple(patterns), self.parse_list(frozenset({"esac"}))))
            self.expect("esac")
            return _Case(line, subject, tuple(cases))
        if word == "function":
            self.pos += 1
            name = _lead(self.next())
            self.skip("()", "\n")
            return _Func(line, name, self.parse_command())
        if _NAME.fullmatch(word) and self.peek(1) == "()":
            self.pos += 2
            self.skip("\n")
            return _Func(line, word, self.parse_command())
        if word == "[[":
            words: list[RawWord | _ArrayWord] = []
            while self.peek() is not None:
                token = self.next()
                assert token is not None
                words.append(token if isinstance(token, tuple) else (Part("lit", token),))
                if _lead(token) == "]]":
                    break
            return _Simple(line, tuple(words))
        words = []
        while True:
            token = self.peek()
            if isinstance(token, tuple):
                self.pos += 1
                found = _assignment(token)
                if found is not None and not found[2] and self.peek() == "(":
                    self.pos += 1
                    items_: list[RawWord] = []
                    while self.peek() is not None and self.peek() != ")":
                        item = self.next()
                        if isinstance(item, tuple):
                            items_.append(item)
                    self.pos += 1
                    words.append(_ArrayWord(token, tuple(items_)))
                    continue
                words.append(token)
                continue
            break
        if not words:
            self.pos += 1  # an operator where a command belongs: skip it
        return _Simple(line, tuple(words))


def _tokens(text: str, source: str) -> list[tuple[Token, int]]:
    tokens: list[tuple[Token, int]] = []
    for line, logical in _logical_lines(text):
        tokens.extend((token, line) for token in _lex(logical, line, source))
        tokens.append(("\n", line))
    return tokens


def _parse(text: str, source: str, first_line: int = 1) -> tuple[Node, ...]:
    tokens = _tokens(text, source)
    if first_line != 1:
        tokens = [(token, first_line) for token, _ in tokens]
    return _Parser(tokens, source).parse_list()


# --- running ---------------------------------------------------------------------------------------------------


class _Exit(Exception):
    pass


class _Return(Exception):
    def __init__(self, status: bool | None) -> None:
        super().__init__()
        self.status = status


class _Break(Exception):
    pass


class _Found(Exception):
    """The launch: read (``launch``), or found but not resolved (``error``)."""

    def __init__(self, line: int, launch: Launch | None = None, error: UsageError | None = None) -> None:
        super().__init__(line)
        self.line = line
        self.launch = launch
        self.error = error


Status = bool | None  # None: only running the script tells (sh.why says why)

#: Commands that change nothing the launch reads and succeed; any other command's status is unknown.
_HARMLESS = {
    "echo", "printf", "mkdir", "set", "shopt", "ulimit", "trap", "sleep", "touch", "umask", "wait", "true", ":",
    "hash", "alias", "unalias", "history", "pushd", "popd", "sync", "clear",
}  # fmt: skip
_LOOP_LIMIT = 256


def _body(nodes: Sequence[Node]) -> Callable[[_Shell], Status]:
    """A branch for ``_fork``: run ``nodes``."""
    return lambda sh: _run_list(nodes, sh)


def _nothing(sh: _Shell) -> Status:
    """The branch that runs nothing (an ``if`` without ``else`` not taken)."""
    return True


def _unknown(sh: _Shell) -> Status:
    return None


def _run_list(nodes: Sequence[Node], sh: _Shell) -> Status:
    status: Status = True
    for node in nodes:
        status = _run(node, sh)
    return status


def _run(node: Node, sh: _Shell) -> Status:
    if isinstance(node, _Simple):
        return _run_simple(node, sh)
    if isinstance(node, _AndOr):
        status = _run(node.first, sh)
        for op, nxt in node.rest:
            if status is None:
                status = _fork(sh, node.line, "&&/|| list", sh.why, [_body((nxt,)), _unknown])
            elif status == (op == "&&"):
                status = _run(nxt, sh)
        return status
    if isinstance(node, _Pipe):
        for command in node.commands:
            status = _run(command, sh.clone() if len(node.commands) > 1 else sh)
        return status if not node.negate or status is None else not status
    if isinstance(node, _If):
        return _run_if(node, node.arms, sh)
    if isinstance(node, _Case):
        return _run_case(node, sh)
    if isinstance(node, _For):
        return _run_for(node, sh)
    if isinstance(node, _Loop):
        return _run_loop(node, sh)
    if isinstance(node, _Group):
        if not node.subshell:
            return _run_list(node.body, sh)
        try:
            return _run_list(node.body, sh.clone())
        except _Exit:
            return None
    sh.funcs[node.name] = node
    return True


def _run_if(node: _If, arms: Sequence[tuple[tuple[Node, ...], tuple[Node, ...]]], sh: _Shell) -> Status:
    if not arms:
        return _run_list(node.orelse, sh) if node.orelse is not None else True
    cond, body = arms[0]
    status = _run_list(cond, sh)
    if status is True:
        return _run_list(body, sh)
    if status is False:
        return _run_if(node, arms[1:], sh)
    return _fork(sh, node.line, "if", sh.why, [_body(body), lambda s: _run_if(node, arms[1:], s)])


def _run_case(node: _Case, sh: _Shell) -> Status:
    try:
        subject = sh.string(node.word)
    except _Unresolved as exc:
        branches = [_body(body) for _, body in node.items]
        if not any(_lead(p) == "*" for patterns, _ in node.items for p in patterns):
            branches.append(_nothing)
        return _fork(sh, node.line, "case", exc.describe(), branches)
    for patterns, body in node.items:
        for pattern in patterns:
            try:
                glob = sh.string(pattern) if any(p.kind != "lit" for p in pattern) else _lead(pattern)
            except _Unresolved as exc:
                return _fork(sh, node.line, "case", exc.describe(), [_body(body), _nothing])
            if fnmatch.fnmatchcase(subject, glob):
                return _run_list(body, sh)
    return True


def _run_for(node: _For, sh: _Shell) -> Status:
    if node.items is None:
        why = "a C-style for loop, whose count this reader does not follow"
        return _fork(sh, node.line, "for", why, [_body(node.body), _nothing])
    try:
        values = [w for raw in node.items for w in sh.words(raw)]
    except _Unresolved as exc:
        return _fork(sh, node.line, "for", exc.describe(), [_body(node.body), _nothing])
    status: Status = True
    for value in values[:_LOOP_LIMIT]:
        sh.assign(node.name, value)
        try:
            status = _run_list(node.body, sh)
        except _Break:
            break
    return status


def _run_loop(node: _Loop, sh: _Shell) -> Status:
    for _ in range(_LOOP_LIMIT):
        status = _run_list(node.cond, sh)
        if status is not None and node.until:
            status = not status
        if status is False:
            return True
        if status is None:
            why = sh.why
            return _fork(sh, node.line, "while", why, [lambda s: _loop_once(node, s), _nothing])
        if not _loop_once(node, sh):
            return True
    return True


def _loop_once(node: _Loop, sh: _Shell) -> bool:
    try:
        _run_list(node.body, sh)
    except _Break:
        return False
    return True


def _fork(
    sh: _Shell, line: int, what: str, why: str, branches: Sequence[Callable[[_Shell], Status]]
) -> Status:
    """Follow each branch of a choice that cannot be decided; what they set differently becomes unknown."""
    done: list[tuple[_Shell, Status]] = []
    found: list[_Found] = []
    returned: list[_Return] = []
    for branch in branches:
        sub = sh.clone()
        try:
            done.append((sub, branch(sub)))
        except _Found as exc:
            found.append(exc)
        except _Return as exc:
            returned.append(exc)
        except (_Exit, _Break):
            pass  # this path ends here: the launch, if any follows, is on another path
    if len({f.line for f in found}) > 1:
        launches = " and ".join(str(f.line) for f in found)
        error = UsageError(
            f"{sh.source}:{line}: the {what} on line {line} chooses between the launches on lines {launches}, and "
            f"what it tests cannot be decided without running the script ({why})"
        )
        raise _Found(found[0].line, error=error)
    if found:
        raise found[0]
    if not done:
        if returned:
            raise returned[0]
        raise _Exit()
    if returned:
        # the function under way may have returned here: its status is unknown (the paths going on are followed)
        sh.returned = why
    first = done[0][0]
    for name in {name for sub, _ in done for name in sub.vars}:
        values = [sub.vars.get(name) for sub, _ in done]
        if all(v == values[0] for v in values):
            if values[0] is None:
                sh.vars.pop(name, None)  # unset on every path
            else:
                sh.vars[name] = values[0]
            continue
        lines = sorted(
            {sub.where[name] for sub, _ in done if name in sub.where and sub.vars.get(name) is not None}
        )
        sh.where[name] = lines[0] if lines else line
        sh.vars[name] = _Pending(
            sh.where[name],
            f"set differently (on {'line' if len(lines) == 1 else 'lines'} {', '.join(map(str, lines))}) by the "
            f"branches of the conditional ({what}) on line {line}, which cannot be decided: {why} (--set or "
            "--unset what it reads to decide it)",
            name,
        )
    for sub, _ in done:
        sh.exported.update(sub.exported)
        for name, func in sub.funcs.items():
            sh.funcs.setdefault(name, func)
    sh.cwd = first.cwd if all(sub.cwd == first.cwd for sub, _ in done) else sh.cwd
    if sh.out is not None:
        if len({tuple(sub.out or ()) for sub, _ in done}) > 1:
            raise _Unresolved(
                "", f"a command substitution whose output depends on what cannot be decided ({why})"
            )
        sh.out[:] = first.out or []
    statuses = {status for _, status in done}
    sh.why = why
    return statuses.pop() if len(statuses) == 1 else None


def _assignment(raw: Token | _ArrayWord) -> tuple[str, bool, RawWord] | None:
    """``NAME=...`` / ``NAME+=...`` as (name, append, value word); None when the word is no assignment."""
    if isinstance(raw, _ArrayWord):
        raw = raw.head
    if isinstance(raw, str) or not raw or raw[0].kind != "lit":
        return None
    m = _ASSIGN.match(raw[0].text)
    if m is None or m.group(2):
        return None
    rest = raw[0].text[m.end() :]
    value = ((Part("lit", rest),) if rest else ()) + raw[1:]
    return m.group(1), m.group(3) == "+", value


def _assign(sh: _Shell, word: RawWord | _ArrayWord, line: int) -> str:
    """Apply an assignment word; returns the name it sets."""
    found = _assignment(word)
    assert found is not None
    name, append, value = found
    sh.where[name] = line
    try:
        if isinstance(word, _ArrayWord):
            sh.assign(name, [w for raw in word.items for w in sh.words(raw)], append)
        else:
            sh.assign(name, sh.string(value), append)
    except _Unresolved as exc:
        # only an error if the launch uses it: many scripts set variables they never pass on
        if name not in sh.sets:
            sh.vars[name] = _Pending(line, exc.why, exc.root, exc.trail)
    return name


def _run_simple(node: _Simple, sh: _Shell) -> Status:
    words = list(node.words)
    while words and _lead(words[0]) in ("time", "exec", "nohup", "builtin"):
        words.pop(0)
    prefix: list[RawWord | _ArrayWord] = []
    while words and _assignment(words[0]) is not None:
        prefix.append(words.pop(0))
    if not words:
        for word in prefix:
            _assign(sh, word, node.line)
        return True
    # VAR=value cmd: the value is the command's (its environment), and the shell's own is back after it
    saved = {name: sh.vars.get(name) for name in (_name_of(word) for word in prefix)}
    assigned = [_assign(sh, word, node.line) for word in prefix]
    status = _command(node, words, sh, assigned)
    for name, old in saved.items():
        if old is None:
            sh.vars.pop(name, None)
        else:
            sh.vars[name] = old
    return status


def _name_of(word: RawWord | _ArrayWord) -> str:
    found = _assignment(word)
    assert found is not None
    return found[0]


def _command(node: _Simple, words: list[RawWord | _ArrayWord], sh: _Shell, assigned: list[str]) -> Status:
    """A command (its prefix assignments applied): a declaration, the launch, a function, a builtin."""
    head = _lead(words[0])
    _run_inner(node, words, sh)
    if head in _DECLARE:
        for word in words[1:]:
            if head == "local" and sh.frames and _assignment(word) is not None:
                sh.frames[-1].setdefault(_name_of(word), sh.vars.get(_name_of(word)))
            if _assignment(word) is not None:
                name = _assign(sh, word, node.line)
            else:
                name = _lead(word)
                if not _NAME.fullmatch(name):
                    continue  # an option (-x, -a): nothing to set
                if head == "local" and sh.frames:
                    sh.frames[-1].setdefault(name, sh.vars.get(name))
                    sh.vars.pop(name, None)  # ``local x``: a new, unset x
            if head == "export":
                sh.exported[name] = None
        return True
    raws = [w for w in words if isinstance(w, tuple)]
    try:
        if head == "[[":  # no word splitting inside [[ ]]
            argv = [sh.string(raw) for raw in raws]
        else:
            argv = [w for raw in raws for w in sh.words(raw)]
    except _Unresolved as exc:
        # a line that is not the launch may use anything; the launch line is judged strictly
        lenient = sh.clone(lenient=True)
        try:
            seen = [w for raw in raws for w in lenient.words(raw)]
        except _Unresolved:
            seen = []
        if sh.match is not None and sh.match(seen) is not None:
            raise _Found(node.line, error=_usage(sh.source, node.line, exc)) from None
        if sh.out is not None:
            raise  # a command substitution's output would depend on it
        sh.why = exc.describe()
        return None
    if not argv:
        return True
    if sh.match is not None:
        start = sh.match(argv)
        if start is not None:
            raise _Found(node.line, launch=_launch(sh, node.line, argv, start, assigned))
    if argv[0] in sh.funcs:
        return _call(sh, sh.funcs[argv[0]], argv[1:])
    return _builtin(sh, node.line, argv)


def _run_inner(node: _Simple, words: list[RawWord | _ArrayWord], sh: _Shell) -> None:
    """A launch inside ``bash -c "..."`` (``srun ... bash -c``, ``docker exec ... sh -c``): the string is a script
    of its own; a launch in it is the launch (its line is the line of the ``bash -c``)."""
    if sh.match is None:
        return
    for i, raw in enumerate(words[:-2]):
        if posixpath.basename(_lead(raw)) in ("bash", "sh") and _lead(words[i + 1]) == "-c":
            code = words[i + 2]
            if not isinstance(code, tuple):
                return
            try:
                text = sh.string(code)
                nodes = _parse(text, sh.source, node.line)
            except (_Unresolved, UsageError):
                return
            with contextlib.suppress(_Exit, _Return, _Break):  # the end of that script, not of this one
                _run_list(nodes, sh.clone(positional=[], called=True))
            return


def _launch(sh: _Shell, line: int, argv: list[str], start: int, assigned: list[str]) -> Launch:
    env: dict[str, str] = {}
    for name in [*sh.exported, *assigned]:
        try:
            value = sh.scalar(name)
        except _Unresolved as exc:
            raise _usage(sh.source, line, exc) from None
        if value is not None:  # ``export X`` of an unset X puts nothing in the environment
            env[name] = value
    return Launch(source=sh.source, line=line, argv=tuple(argv), start=start, env=env)


def _call(sh: _Shell, func: _Func, args: list[str]) -> Status:
    if sh.depth > 20:
        sh.why = f"the function {func.name} calls itself too deep"
        return None
    saved, returned, called = sh.positional, sh.returned, sh.called
    sh.positional, sh.returned, sh.called = list(args), "", True
    sh.depth += 1
    sh.frames.append({})
    try:
        status = _run(func.body, sh)
    except _Return as exc:
        status = exc.status
    finally:
        sh.positional = saved
        sh.depth -= 1
        for name, old in sh.frames.pop().items():  # the caller's values of the function's locals are back
            if old is None:
                sh.vars.pop(name, None)
            else:
                sh.vars[name] = old
    if sh.returned:
        sh.why = f"{func.name} may return early: {sh.returned}"
        status = None
    sh.returned, sh.called = returned, called
    return status


#: Commands whose output a command substitution may use: they compute from their words and the shell alone.
_PURE = {
    "echo",
    "printf",
    "pwd",
    "dirname",
    "basename",
    "realpath",
    "readlink",
    "cd",
    "true",
    ":",
    "test",
    "[",
}


def _builtin(sh: _Shell, line: int, argv: list[str]) -> Status:
    name, args = argv[0], argv[1:]
    if name in ("[", "test", "[["):
        if name != "test":
            args = args[:-1]
        status = _test(args, sh, double=name == "[[")
        return status
    if name == "false":
        return False
    if name == "exit":
        if sh.out is None:
            sh.exited = line
        raise _Exit()
    if name == "return":
        raise _Return(not args or args[0] == "0")
    if name in ("break", "continue"):
        raise _Break()
    if name == "unset":
        for var in args:
            if not var.startswith("-"):
                sh.vars.pop(var, None)
                sh.unset = sh.unset | {var}  # unset by the script: no longer the caller's to say
        return True
    if name == "shift":
        count = int(args[0]) if args and args[0].isdigit() else 1
        sh.positional = sh.positional[count:]
        return True
    if name == "set" and args[:1] == ["--"]:
        sh.positional = args[1:]
        return True
    if name == "cd":
        target = next((a for a in args if not a.startswith("-")), None)
        if target is None:
            sh.why = "cd to $HOME, the caller's"
            return None
        sh.cwd = posixpath.normpath(posixpath.join(sh.cwd, target))
        return True
    if name in ("source", ".") and args:
        return _source(sh, line, args)
    if name in ("source", ".", "read", "mapfile", "readarray", "getopts", "eval"):
        if name == "read":
            for var in (a for a in args if _NAME.fullmatch(a)):
                sh.vars[var] = _Pending(line, f"read from input on line {line}", var)
        sh.why = f"it runs {name} on line {line}"
        return None
    output = _output(sh, name, args)
    if output is not None:
        if sh.out is not None:
            sh.out.append(output)
        return True
    if name in _HARMLESS:
        return True
    if sh.out is not None:
        raise _Unresolved("", f"a command substitution (it runs {name}, whose output only running it tells)")
    shown = " ".join(argv)
    sh.why = f"it depends on what `{shown if len(shown) <= 60 else shown[:57] + '...'}` does when run"
    return None


def _source(sh: _Shell, line: int, args: list[str]) -> Status:
    """``source FILE`` / ``. FILE``: the file is read (not run) where it is, from the script's directory as bash
    would; its assignments apply, attributed to the ``source`` line. One that is not there (a toolkit's env file
    on a cluster) is remembered, to be named where a variable nobody set is read."""
    target = args[0]
    try:
        with open(posixpath.join(sh.cwd, target), encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        nodes = _parse(text, sh.source, line)
    except (OSError, UsageError):
        sh.sourced = (*sh.sourced, f"{target} (sourced on line {line}, not read)")
        sh.why = f"it sources {target} on line {line}, which is not read"
        return None
    if sh.depth > 20:
        return None
    saved = sh.positional
    if len(args) > 1:
        sh.positional = args[1:]
    sh.depth += 1
    try:
        return _run_list(nodes, sh)
    except _Return as exc:
        return exc.status
    finally:
        sh.depth -= 1
        sh.positional = saved


def _output(sh: _Shell, name: str, args: list[str]) -> str | None:
    """What a pure command prints (None: not one of them)."""
    plain = [a for a in args if not a.startswith("-") or a == "-"]
    if name == "echo":
        newline = "-n" not in args
        words = args[1:] if args[:1] in (["-n"], ["-e"], ["-ne"], ["-en"]) else args
        return " ".join(words) + ("\n" if newline else "")
    if name == "printf" and args:
        if args[0] in ("%s", "%s\\n", "%s\n"):
            return "".join(a + ("\n" if args[0] != "%s" else "") for a in args[1:])
        if len(args) == 1 and "%" not in args[0]:
            return args[0].replace("\\n", "\n")
        return None
    if name == "pwd":
        return sh.cwd + "\n"
    if name == "dirname" and plain:
        return "".join((posixpath.dirname(p.rstrip("/") or "/") or ".") + "\n" for p in plain)
    if name == "basename" and plain:
        base = posixpath.basename(plain[0].rstrip("/"))
        if len(plain) > 1 and base.endswith(plain[1]) and base != plain[1]:
            base = base[: -len(plain[1])]
        return base + "\n"
    if name in ("realpath", "readlink") and plain and (name == "realpath" or "-f" in args):
        return "".join(posixpath.normpath(posixpath.join(sh.cwd, p)) + "\n" for p in plain)
    return None


def _test(args: list[str], sh: _Shell, double: bool) -> Status:
    """``[ ... ]`` / ``[[ ... ]]``: true, false, or None when it tests what only running tells (files)."""
    pos = 0
    sh.why = ""

    def peek() -> str | None:
        return args[pos] if pos < len(args) else None

    def or_() -> Status:
        nonlocal pos
        left = and_()
        while peek() in ("-o", "||"):
            pos += 1
            right = and_()
            left = True if left is True or right is True else (None if None in (left, right) else False)
        return left

    def and_() -> Status:
        nonlocal pos
        left = not_()
        while peek() in ("-a", "&&"):
            pos += 1
            right = not_()
            left = False if left is False or right is False else (None if None in (left, right) else True)
        return left

    def not_() -> Status:
        nonlocal pos
        if peek() == "!":
            pos += 1
            inner = not_()
            return None if inner is None else not inner
        return primary()

    def primary() -> Status:
        nonlocal pos
        word = peek()
        if word is None:
            return False
        if word == "(":
            pos += 1
            inner = or_()
            if peek() == ")":
                pos += 1
            return inner
        following = args[pos + 1] if pos + 1 < len(args) else None
        if following in _BINARY and pos + 2 < len(args):
            left, right = word, args[pos + 2]
            pos += 3
            return _binary(following, left, right, double)
        if word.startswith("-") and len(word) == 2 and following is not None and word != "-":
            pos += 2
            if word == "-z":
                return following == ""
            if word == "-n":
                return following != ""
            if word == "-v":
                if sh.lookup(following) is not None:
                    return True
                if sh.is_known_unset(following):
                    return False
                sh.why = f"whether {following} is set is the caller's environment's to say"
                return None
            sh.why = f"it tests the file system ({word} {following})"
            return None
        pos += 1
        return word != ""

    status = or_()
    if status is None and not sh.why.startswith(("it tests", "whether")):
        sh.why = "it tests what only running the script tells"
    return status


_BINARY = {"=", "==", "!=", "=~", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef"}


def _binary(op: str, left: str, right: str, double: bool) -> Status:
    if op in ("=", "=="):
        return fnmatch.fnmatchcase(left, right) if double else left == right
    if op == "!=":
        return not fnmatch.fnmatchcase(left, right) if double else left != right
    if op == "=~":
        return re.search(right, left) is not None
    if op in ("<", ">"):
        return left < right if op == "<" else left > right
    if op in ("-nt", "-ot", "-ef"):
        return None
    try:
        a, b = int(left or "0"), int(right or "0")
    except ValueError:
        return None
    return {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b, "-gt": a > b, "-ge": a >= b}[op]


# --- the reader ------------------------------------------------------------------------------------------------


def read_launch(
    text: str,
    source: str,
    match: Matcher,
    sets: Mapping[str, str] | None = None,
    looking_for: str = "launch command",
    cwd: str | None = None,
    unset: Collection[str] = (),
) -> Launch:
    """The first command of ``text`` that ``match`` accepts, its words resolved (see the module docstring).

    ``sets`` are the user's values (``--set``; a value written ``(a b)`` is an array), ``unset`` the variables
    the user says are not set (``--unset``; ``parse_sets`` gives both in one mapping). ``cwd`` is the directory
    the script is taken to run from (``$(pwd)``; default: the current one)."""
    given = dict(sets or {})
    positional: list[str] = []
    while str(len(positional) + 1) in given:  # --set 1=VALUE: the script's arguments
        positional.append(given.pop(str(len(positional) + 1)))
    unset = frozenset(unset) | frozenset(getattr(sets, "unset", ()))
    sh = _Shell(
        source=source,
        sets={name: _set_value(value) for name, value in given.items()},
        unset=unset,
        cwd=cwd if cwd is not None else os.getcwd(),
        match=match,
        positional=positional,
    )
    nodes = _parse(text, source)
    try:
        _run_list(nodes, sh)
    except _Found as found:
        if found.error is not None:
            raise found.error from None
        assert found.launch is not None
        return found.launch
    except (_Exit, _Return, _Break):
        pass
    # no launch ran: a launch line that exists is named, with why it is not reached
    for node, where in _walk(nodes, "at the top of the script"):
        if isinstance(node, _Simple) and _matches(node, sh):
            why = where if where != "at the top of the script" else "it comes after the script ends"
            if sh.exited and where == "at the top of the script":
                why = f"the script exits on line {sh.exited} before it"
            raise UsageError(
                f"{source}:{node.line}: the {looking_for} on this line is not run with the values the script "
                f"was given: {why}; give the values that select it with --set VAR=VALUE (1=VALUE for the script's "
                "first argument) or --unset VAR"
            )
    raise UsageError(f"{source}: no {looking_for} found in it")


def _matches(node: _Simple, sh: _Shell) -> bool:
    lenient = sh.clone(lenient=True)
    try:
        argv = [w for raw in node.words if isinstance(raw, tuple) for w in lenient.words(raw)]
    except _Unresolved:
        return False
    return sh.match is not None and sh.match(argv) is not None


def _walk(nodes: Sequence[Node], where: str) -> Iterator[tuple[Node, str]]:
    for node in nodes:
        yield node, where
        if isinstance(node, _AndOr):
            yield from _walk([node.first, *(n for _, n in node.rest)], where)
        elif isinstance(node, _Pipe):
            yield from _walk(node.commands, where)
        elif isinstance(node, _If):
            for cond, body in node.arms:
                yield from _walk(cond, where)
                yield from _walk(body, f"it is in a branch of the if on line {node.line} that is not taken")
            yield from _walk(
                node.orelse or (), f"it is in the else branch of the if on line {node.line}, not taken"
            )
        elif isinstance(node, _Case):
            for _, body in node.items:
                yield from _walk(body, f"it is in a branch of the case on line {node.line} that is not taken")
        elif isinstance(node, _For | _Loop):
            yield from _walk(node.body, f"it is in a loop on line {node.line} that does not run")
        elif isinstance(node, _Group):
            yield from _walk(node.body, where)
        elif isinstance(node, _Func):
            yield from _walk(
                (node.body,), f"it is in the function {node.name}, which is not called before it"
            )


def _set_value(value: str) -> Value:
    """A ``--set`` value: ``(a b)`` is an array (``()`` an empty one), anything else the text itself."""
    if value.startswith("(") and value.endswith(")"):
        words = [t for t in _lex(value[1:-1], 0, "--set") if isinstance(t, tuple)]
        shell = _Shell(source="--set", sets={}, lenient=True)
        return [w for raw in words for w in shell.words(raw)]
    return value


def _usage(source: str, line: int, exc: _Unresolved) -> UsageError:
    name, root = exc.name, exc.root
    hints = [f"--set {n}=VALUE" for n in dict.fromkeys((name, root)) if _NAME.fullmatch(n) or n.isdigit()]
    if exc.why.startswith(_ENVIRONMENT) and _NAME.fullmatch(root):
        hints.append(f"--unset {root} when the caller does not set it")
    what = (
        f"variable {name}"
        if _NAME.fullmatch(name)
        else f"argument ${name}"
        if name.isdigit()
        else quote(name)
    )
    hint = (
        "give " + " or ".join(hints)
        if hints
        else "replace it with a variable and give that with --set VAR=VALUE"
    )
    return UsageError(
        f"{source}:{line}: {what} cannot be resolved without running the script ({exc.chain()}: {exc.why}); {hint}"
    )


class ShellSets(dict[str, str]):
    """The ``--set VAR=VALUE`` values by name, and the ``--unset VAR`` names (``unset``), for ``read_launch``."""

    def __init__(self, values: Mapping[str, str] | None = None, unset: Collection[str] = ()) -> None:
        super().__init__(values or {})
        self.unset = frozenset(unset)


def parse_sets(items: Sequence[str], unset: Sequence[str] = ()) -> ShellSets:
    """``--set VAR=VALUE`` and ``--unset VAR`` items (a malformed item is a usage error naming it).

    ``--set VAR=`` gives VAR the empty value, ``--set 'VAR=(a b)'`` an array (``'VAR=()'`` an empty one);
    ``--unset VAR`` says the caller does not set VAR, so ``${VAR:-default}`` takes the script's default;
    ``--set 1=VALUE`` (``2=``...) gives the script's arguments, which it is otherwise read without."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not (_NAME.fullmatch(name) or re.fullmatch(r"[1-9][0-9]*", name)):
            raise UsageError(
                f"--set {quote(item)}: expected VAR=VALUE with VAR a shell variable name "
                "(or N=VALUE for the script's N-th argument)"
            )
        out[name] = value
    for name in unset:
        if not _NAME.fullmatch(name):
            raise UsageError(f"--unset {quote(name)}: expected a shell variable name")
        if name in out:
            raise UsageError(f"--set {name}=... and --unset {name}: give one of them")
    return ShellSets(out, unset)
