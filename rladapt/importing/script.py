"""The shell-script reader: the one launch command of a script as teams write them, with its words resolved.

A launch script is bash, but the part a migration needs is small and static: ``\\`` continuations, variables set
earlier (``X=1``, ``export X=...``, ``declare``/``local``/``readonly``), ``${VAR:-default}`` and its siblings,
bash arrays of overrides (``ARGS=(a=1 b=2)`` then ``"${ARGS[@]}"``), ``$@`` (no arguments), simple integer
arithmetic ``$((...))``, quoting and comments. Nothing is executed: what only running the script can tell (a
variable of the caller's environment, a command substitution, a value set inside ``if``/``for``/``case``) is a
``UsageError`` naming the line and the variable, unless the user gives it (``--set VAR=VALUE``).

Why a tokenizer of our own rather than ``shlex.split``: shlex strips quotes before expansion could see them, so it
cannot tell ``'$X'`` (literal) from ``"$X"`` (one word) from ``$X`` (split into words), which bash treats three
ways. Words are still split the way shlex's POSIX mode does (``shlex.quote`` round-trips through this reader).
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rladapt.primitives.errors import UsageError, quote

#: Where the framework's arguments start in a command's words (None: not the launch looked for).
Matcher = Callable[[list[str]], "int | None"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")
_OPEN_BLOCK = {"if": "fi", "for": "done", "while": "done", "until": "done", "case": "esac", "select": "done"}
_CLOSE_BLOCK = {"fi", "done", "esac"}
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
    """A variable the reader cannot know: set from a command substitution, or inside a conditional block."""

    line: int
    why: str


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
    def __init__(self, name: str, why: str) -> None:
        super().__init__(name)
        self.name = name
        self.why = why


# --- lines -----------------------------------------------------------------------------------------------------


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each logical line: continuations joined, open quotes and ``(`` carried on."""
    out: list[tuple[int, str]] = []
    buf = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not buf:
            start = number
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
            depth -= 1
        word_start = ch in " \t\n;(|&" and quote_char is None
        i += 1
    return quote_char is not None or depth > 0


# --- words -----------------------------------------------------------------------------------------------------


def _split(text: str, line: int, source: str) -> list[list[RawWord | str]]:
    """Commands of one logical line, each a list of raw words (or an operator string such as ``(`` / ``)``).

    Commands are separated by ``;``, ``&&``, ``||``, ``|`` and ``&``; redirections are dropped with their target.
    """
    commands: list[list[RawWord | str]] = []
    words: list[RawWord | str] = []
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
            i += 2 if text[i : i + 2] in ("&&", "||", ";;") else 1
            if ch == "&" and i < n and text[i] == ">":  # &> file
                i = _skip_target(text, i + 1)
                continue
            commands.append(words)
            words = []
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
    commands.append(words)
    return [c for c in commands if c]


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


@dataclass
class _Shell:
    source: str
    sets: Mapping[str, str]
    vars: dict[str, Value] = field(default_factory=dict)
    exported: dict[str, None] = field(default_factory=dict)  # ordered set
    lenient: bool = False  # unknown values read as empty: only to recognise the launch line

    def lookup(self, name: str) -> Value | None:
        if name in self.sets:
            return self.sets[name]
        if name in ("@", "*"):
            return []  # a launch script runs with no arguments
        if name == "#":
            return "0"
        if name == "0":
            return self.source
        if name.isdigit():
            return None
        return self.vars.get(name)

    def scalar(self, name: str) -> str | None:
        value = self.lookup(name)
        if isinstance(value, _Pending):
            if self.lenient:
                return ""
            raise _Unresolved(name, value.why)
        if isinstance(value, list):
            return value[0] if value else ""
        return value

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
                if not self.lenient:
                    raise _Unresolved(
                        text[i : end + 1 if end > 0 else len(text)][:60], "a command substitution"
                    )
                i = end + 1 if end > 0 else len(text)
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
                end = text.find("))", i)
                if end < 0:
                    raise _Unresolved(text[i:], "an unterminated $((...))")
                out.append((self._arith(text[i + 3 : end]), False))
                i = end + 2
            elif nxt == "{":
                end = _matching(text, i + 1)
                out.append((self._braced(text[i + 2 : end], quoted), not quoted))
                i = end + 1
            elif nxt in _SPECIAL:
                value = self.lookup(nxt)
                if nxt in "@*":
                    out.append((list(value) if isinstance(value, list) else [], False))
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

    def _required(self, name: str) -> str:
        value = self.scalar(name)
        if value is None and self.lenient:
            return ""
        if value is None:
            raise _Unresolved(name, "it is not set in the script, so it comes from the caller's environment")
        return value

    def _braced(self, body: str, quoted: bool) -> str | list[str]:
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\[([@*])\]", body)
        if m:
            value = self.lookup(m.group(1))
            if isinstance(value, _Pending):
                raise _Unresolved(m.group(1), value.why)
            items = value if isinstance(value, list) else ([] if value is None else [value])
            if m.group(2) == "*" and quoted:
                return " ".join(items)
            return list(items) if quoted else " ".join(items)
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\[(\d+)\]", body)
        if m:
            value = self.lookup(m.group(1))
            if isinstance(value, _Pending):
                raise _Unresolved(m.group(1), value.why)
            items = value if isinstance(value, list) else ([] if value is None else [value])
            index = int(m.group(2))
            return items[index] if index < len(items) else ""
        if body.startswith("#"):
            return str(len(self._required(body[1:])))
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*|[@*#0-9])(?:(:?[-=+?])(.*))?", body, re.S)
        if m is None:
            raise _Unresolved("${" + body + "}", "an expansion this reader does not evaluate")
        name, op, word = m.group(1), m.group(2), m.group(3) or ""
        value = self.scalar(name)
        if op is None:
            if value is None:
                if name in _SPECIAL or self.lenient:
                    return ""
                raise _Unresolved(
                    name, "it is not set in the script, so it comes from the caller's environment"
                )
            return value
        unset = value is None or (op.startswith(":") and value == "")
        sub = op[-1]
        if sub in "-=":
            if not unset:
                return str(value)
            result = self.string(_parts_of(word))
            if sub == "=":
                self.vars[name] = result
            return result
        if sub == "+":
            return "" if unset else self.string(_parts_of(word))
        if unset:  # ${VAR:?message}
            raise _Unresolved(name, "required by ${" + body + "} and not set in the script")
        return str(value)

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


# --- statements ------------------------------------------------------------------------------------------------


def _lead(raw: RawWord | str) -> str:
    """The word's text when it is plain (unquoted, no expansion), else ''."""
    if isinstance(raw, str) or len(raw) != 1 or raw[0].kind != "lit":
        return ""
    return raw[0].text


def _assignment(raw: RawWord | str) -> tuple[str, bool, RawWord] | None:
    """``NAME=...`` / ``NAME+=...`` as (name, append, value word); None when the word is no assignment."""
    if isinstance(raw, str) or not raw or raw[0].kind != "lit":
        return None
    m = _ASSIGN.match(raw[0].text)
    if m is None or m.group(2):
        return None
    rest = raw[0].text[m.end() :]
    value = ((Part("lit", rest),) if rest else ()) + raw[1:]
    return m.group(1), m.group(3) == "+", value


def read_launch(
    text: str,
    source: str,
    match: Matcher,
    sets: Mapping[str, str] | None = None,
    looking_for: str = "launch command",
) -> Launch:
    """The first command of ``text`` that ``match`` accepts, its words resolved (see the module docstring)."""
    shell = _Shell(source=source, sets=dict(sets or {}))
    depth = 0
    for line, logical in _logical_lines(text):
        for command in _split(logical, line, source):
            depth = _track_blocks(command, depth)
            found = _statement(shell, command, line, depth, match)
            if found is not None:
                return found
    raise UsageError(f"{source}: no {looking_for} found in it")


def _track_blocks(command: list[RawWord | str], depth: int) -> int:
    for raw in command:
        word = _lead(raw)
        if word in _OPEN_BLOCK:
            depth += 1
        elif word in _CLOSE_BLOCK:
            depth = max(0, depth - 1)
    return depth


def _statement(
    shell: _Shell, command: list[RawWord | str], line: int, depth: int, match: Matcher
) -> Launch | None:
    words = list(command)
    while words and _lead(words[0]) in ("then", "do", "else", "{", "time", "exec", "nohup", "!"):
        words.pop(0)
    if not words:
        return None
    declare = _lead(words[0]) in _DECLARE
    if declare:
        export = _lead(words[0]) == "export"
        names = [w for w in words[1:] if not _lead(w).startswith("-")]
        i = 0
        while i < len(names):
            _assign_word(shell, names, i, line, depth, export)
            i += 1 if not (i + 1 < len(names) and names[i + 1] == "(") else _array_end(names, i)
        return None
    assigned: dict[str, str] = {}
    i = 0
    while i < len(words) and _assignment(words[i]) is not None:
        name, _, _ = _assignment(words[i])  # type: ignore[misc]
        end = _assign_word(shell, words, i, line, depth, export=False)
        value = shell.vars.get(name)
        if isinstance(value, str):
            assigned[name] = value
        i += end
    rest = words[i:]
    if not rest:
        return None
    if any(isinstance(w, str) for w in rest):
        return None  # a subshell or function definition: not a launch line
    try:
        argv = [w for raw in rest for w in shell.words(raw)]  # type: ignore[arg-type]
    except _Unresolved:
        argv = None
    if argv is None:
        # a line that is not the launch may use anything; the launch line is judged strictly below
        lenient = _Shell(source=shell.source, sets=shell.sets, vars=dict(shell.vars), lenient=True)
        try:
            argv = [w for raw in rest for w in lenient.words(raw)]  # type: ignore[arg-type]
        except _Unresolved:
            return None
        if match(argv) is None:
            return None
        try:
            argv = [w for raw in rest for w in shell.words(raw)]  # type: ignore[arg-type]
        except _Unresolved as exc:
            raise _usage(shell.source, line, exc) from None
    start = match(argv)
    if start is None:
        if (argv and argv[0] == "set") or (argv and argv[0] == "unset"):
            for name in argv[1:] if argv[0] == "unset" else []:
                shell.vars.pop(name, None)
        return None
    env = {name: _scalar_or_error(shell, name, line) for name in shell.exported}
    env.update(assigned)
    return Launch(source=shell.source, line=line, argv=tuple(argv), start=start, env=env)


def _scalar_or_error(shell: _Shell, name: str, line: int) -> str:
    try:
        value = shell.scalar(name)
    except _Unresolved as exc:
        raise _usage(shell.source, line, exc) from None
    return value or ""


def _array_end(words: list[RawWord | str], i: int) -> int:
    j = i + 1
    while j < len(words) and words[j] != ")":
        j += 1
    return j - i + 1


def _assign_word(
    shell: _Shell, words: list[RawWord | str], i: int, line: int, depth: int, export: bool
) -> int:
    """Apply the assignment at ``words[i]``; returns how many words it took (an array takes its elements)."""
    found = _assignment(words[i])
    if found is None:
        name = _lead(words[i])
        if export and _NAME.fullmatch(name):
            shell.exported[name] = None
        return 1
    name, append, value = found
    taken = 1
    is_array = not value and i + 1 < len(words) and words[i + 1] == "("
    if export:
        shell.exported[name] = None
    if name in shell.sets:
        return _array_end(words, i) if is_array else taken
    if depth > 0:
        shell.vars[name] = _Pending(line, f"set inside a conditional or loop at line {line}")
        return _array_end(words, i) if is_array else taken
    try:
        if is_array:
            taken = _array_end(words, i)
            items = [w for raw in words[i + 2 : i + taken - 1] for w in shell.words(raw)]  # type: ignore[arg-type]
            old = shell.vars.get(name)
            if append and isinstance(old, list):
                items = [*old, *items]
            shell.vars[name] = items
        else:
            text = shell.string(value)
            old = shell.vars.get(name)
            if append and isinstance(old, list):
                shell.vars[name] = [*old, text]
            else:
                shell.vars[name] = (old if append and isinstance(old, str) else "") + text
    except _Unresolved as exc:
        # only an error if the launch uses it: many scripts set variables they never pass on
        shell.vars[name] = _Pending(line, f"{exc.why} ({exc.name}) at line {line}")
    return taken


def _usage(source: str, line: int, exc: _Unresolved) -> UsageError:
    name = exc.name
    if _NAME.fullmatch(name):
        hint = f"give it with --set {name}=VALUE"
        what = f"variable {name}"
    else:
        hint = "replace it with a variable and give that with --set VAR=VALUE"
        what = quote(name)
    return UsageError(
        f"{source}:{line}: {what} cannot be resolved without running the script ({exc.why}); {hint}"
    )


def parse_sets(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """``--set VAR=VALUE`` items as a mapping (a malformed item is a usage error naming it)."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not _NAME.fullmatch(name):
            raise UsageError(f"--set {quote(item)}: expected VAR=VALUE with VAR a shell variable name")
        out[name] = value
    return out
