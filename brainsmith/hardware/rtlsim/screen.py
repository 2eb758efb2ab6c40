"""Refuse RTL that would reach the host when it is simulated, before it is compiled.

A simulator runs the RTL's system tasks on the machine that simulates it, so generated HDL
from a build folder made elsewhere could run commands or write files there. What Verilator
would compile is preprocessed first (``verilator -E``: macros expanded, comments gone, so a
task cannot hide in a macro) and read token by token. Refused, naming file, line and task:

- ``$system``; Verilator's ``$c``/``$c8``...``$c64`` and ```systemc_*`` sections (C++ code in
  the simulator); ``import``/``export "DPI-C"`` (C functions of the host);
- file writes: ``$fopen`` other than read-only (a literal ``"r"`` or ``"rb"``),
  ``$writememh``/``$writememb``, ``$fwrite``/``$fdisplay``/``$fstrobe``/``$fmonitor`` (with
  their b/h/o forms);
- ``$dumpfile`` other than a literal relative path inside the simulation folder;
- reads outside the layer: an ```include`` of a file that is not among the layer's sources
  (checked in the sources as written, before Verilator reads any included file, and again
  in what it preprocessed), and a string literal naming a file outside the layer's folders
  (absolute, ``~`` or with a ``..``), as ``$readmemh``, ``$fopen`` or a parameter would use it.

Reading stays allowed: ``$readmemh``/``$readmemb`` of parameter files, ``$fopen(..., "r")``,
by a relative path or an absolute one into a ``readable`` folder (a layer's code folder).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from brainsmith.errors import BrainsmithError
from brainsmith.hardware.processes import MIB, TooMuchOutput, run_bounded
from brainsmith.hardware.rtlsim.manifest import inside
from brainsmith.hardware.rtlsim.verilator import VERILATOR_FLAGS, Toolchain

PREPROCESS_TIMEOUT = 120.0
# What Verilator's preprocessor may print: this much, or ``PREPROCESS_GROWTH`` times the
# sources' own bytes where that is more (a routed netlist of a large network is tens of MiB
# by itself); more is macros that expand without end
PREPROCESS_LIMIT = 32 * MIB
PREPROCESS_GROWTH = 4  # line markers and each include once: far less in practice
READ_MODES = {"r", "rb"}
COMMAND = "runs a command on this machine"
CODE = "puts C++ code into the simulator"
WRITE = "writes a file on this machine"
TASKS = {"$system": COMMAND, "$writememh": WRITE, "$writememb": WRITE}
for _task in ("$fwrite", "$fdisplay", "$fstrobe", "$fmonitor"):
    TASKS.update({f"{_task}{suffix}": WRITE for suffix in ("", "b", "h", "o")})
TOKENS = re.compile(
    r"""(?P<line>^`line[ \t]+(?P<number>\d+)[ \t]+"(?P<file>[^"\n]*)"[^\n]*\n)
    |(?P<string>"(?:\\.|[^"\\\n])*")
    |(?P<unterminated>"(?:\\.|[^"\\\n])*)
    |(?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
    |(?P<task>\$[A-Za-z0-9_$]+)
    |(?P<directive>`[A-Za-z_]\w*)
    |(?P<word>[A-Za-z_][A-Za-z0-9_$]*|\\\S+)
    |(?P<newline>\n)
    |(?P<other>.)""",
    re.M | re.S | re.X,
)


class UnsafeSource(BrainsmithError, RuntimeError):
    """RTL that would reach the host; the message names file, line and task."""


class PreprocessError(BrainsmithError, RuntimeError):
    """Verilator's preprocessor rejected the sources; the message has its first error."""


@dataclass(frozen=True, slots=True)
class Token:
    kind: str
    text: str
    file: str
    line: int


def screen(
    paths: list[str],
    toolchain: Toolchain,
    cwd: str,
    origins: dict[str, str] | None = None,
    readable: Iterable[str] = (),
    defines: Iterable[str] | None = None,
) -> None:
    """Raise UnsafeSource when the RTL ``paths`` (compiled in that order, in ``cwd``) would
    reach the host; ``origins`` maps a path to the file it is a copy of, for the message;
    ``readable``: folders besides the sources' own and ``cwd`` whose files it may read;
    ``defines``: the ``-D`` flags they are compiled with (None: those every compile here
    has)."""
    names = origins or {}
    sources = Sources(paths, cwd, readable)
    _refuse([found for path in paths for found in sources.includes(path)], names)
    _refuse(list(host_access(_preprocessed(paths, toolchain, cwd, defines), sources)), names)


def _preprocessed(
    paths: list[str], toolchain: Toolchain, cwd: str, defines: Iterable[str] | None = None
) -> str:
    """What Verilator's preprocessor makes of ``paths`` with ``defines`` (None: the defines
    every compile has); PreprocessError when it fails, takes too long or prints too much."""
    if defines is None:
        defines = [flag for flag in VERILATOR_FLAGS if flag.startswith("-D")]
    try:
        result = run_bounded(
            [toolchain.preprocessor, "-E", *defines, *(_as_given(path, cwd) for path in paths)],
            cwd=cwd,
            timeout=PREPROCESS_TIMEOUT,
            limit=preprocess_limit(paths, cwd),
            env=toolchain.env,
        )
    except subprocess.TimeoutExpired as exc:
        raise PreprocessError(
            f"Verilator's preprocessor took longer than {PREPROCESS_TIMEOUT:.0f} s"
        ) from exc
    except TooMuchOutput as exc:
        raise PreprocessError(f"Verilator's preprocessor {exc}") from exc
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if "%Error" in line]
        raise PreprocessError((errors or [result.stderr.strip() or "failed"])[0])
    return result.stdout


def preprocess_limit(paths: list[str], cwd: str) -> int:
    """The bytes Verilator's preprocessor may print for ``paths`` (``PREPROCESS_LIMIT``, or
    ``PREPROCESS_GROWTH`` times their size where that is more)."""
    size = 0
    for path in paths:
        with contextlib.suppress(OSError):  # one that is not there fails the preprocessor
            size += os.path.getsize(os.path.join(cwd, path))
    return max(PREPROCESS_LIMIT, PREPROCESS_GROWTH * size)


def _as_given(path: str, cwd: str) -> str:
    """``path`` as Verilator is given it: relative to ``cwd`` when it has a ``$`` and lies
    there, since Verilator reads ``$NAME``, ``${NAME}`` and ``$(NAME)`` in a file name as the
    environment's (a folder named ``out$(HOME)`` would be another)."""
    if "$" not in path or not inside(os.path.abspath(path), os.path.abspath(cwd)):
        return path
    return os.path.relpath(os.path.abspath(path), os.path.abspath(cwd))


def _refuse(findings: list[tuple[Token, str]], names: dict[str, str]) -> None:
    if findings:
        found = [f"{names.get(t.file, t.file)}:{t.line}: {why}" for t, why in findings]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise UnsafeSource(f"{found[0]}{more}; RTL that reaches the host is not simulated")


class Sources:
    """What the RTL ``paths`` compiled in ``cwd`` may read: the files themselves, and by
    path the sources' folders, ``cwd`` and the ``readable`` folders."""

    def __init__(self, paths: list[str], cwd: str, readable: Iterable[str] = ()) -> None:
        self.cwd = os.path.abspath(cwd)
        self.files = {os.path.abspath(os.path.join(self.cwd, path)) for path in paths}
        self.own = {os.path.dirname(path) for path in self.files} | {self.cwd}
        self.folders = self.own | {os.path.abspath(f) for f in readable if f}

    def includes(self, path: str) -> Iterator[tuple[Token, str]]:
        """Each ```include`` of ``path`` (as written) that is not of a file of the sources'
        folders, before the preprocessor would read it."""
        with open(path, errors="replace") as handle:
            tokens = list(_tokens(handle.read(), path))
        for index, token in enumerate(tokens):
            if token.kind != "directive" or token.text != "`include":
                continue
            named = _next(tokens, index)
            if named is None or named.kind != "string":
                what = named.text if named is not None else "(nothing)"
                yield token, f"`include {what} names no literal file; {INCLUDED}"
            elif self.outside(named.text[1:-1], self.own):
                yield token, f"`include {named.text} reads a file outside the layer's sources"

    def read(self, name: str) -> bool:
        """Whether the preprocessor's ```line`` file ``name`` is one of the sources'."""
        path = os.path.abspath(os.path.join(self.cwd, name))
        return name.startswith("<") or path in self.files or not self.outside(path, self.own)

    @staticmethod
    def outside(path: str, folders: set[str]) -> bool:
        """Whether the literal ``path`` may name a file outside ``folders`` (relative paths
        without ``..`` stay in the folder the tool runs in)."""
        if path.startswith("~"):
            return True
        if os.path.isabs(path):
            return not any(inside(os.path.normpath(path), folder) for folder in folders)
        return ".." in re.split(r"[\\/]", path)


INCLUDED = "only files among the layer's sources are included"


def host_access(text: str, sources: Sources | None = None) -> Iterator[tuple[Token, str]]:
    """(token, "<task> <what it does>") for each use in preprocessed ``text``; with
    ``sources``, also each file read or named outside them."""
    tokens = []
    for token in _tokens(text):
        if token.kind != "line":
            tokens.append(token)
        elif sources is not None and not sources.read(token.text):
            yield token, f'`include "{token.text}" reads a file outside the layer\'s sources'
    for index, token in enumerate(tokens):
        why = _verdict(token, tokens, index)
        if not why and sources is not None and _names_outside(token, sources):
            why = f"{token.text} names a file outside the layer's folders"
        if why:
            yield token, why


def _names_outside(token: Token, sources: Sources) -> bool:
    return token.kind == "string" and Sources.outside(token.text[1:-1], sources.folders)


def _verdict(token: Token, tokens: list[Token], index: int) -> str:
    """Why ``token`` (at ``index`` of ``tokens``) reaches the host ("" when it does not)."""
    judge = VERDICTS.get(token.kind)
    return judge(token, tokens, index) if judge is not None else ""


def _task_verdict(token: Token, tokens: list[Token], index: int) -> str:
    text = token.text
    if text in TASKS:
        return f"{text} {TASKS[text]}"
    if re.fullmatch(r"\$c\d*|\$cpure", text):
        return f"{text} {CODE}"
    if text == "$fopen" and not _read_only(_arguments(tokens, index)):
        return f'{text} opens a file for writing (only a literal "r" or "rb" is simulated)'
    if text == "$dumpfile" and not _inside(_arguments(tokens, index)):
        return f"{text} writes a waveform outside the simulation folder"
    return ""


def _unterminated_verdict(token: Token, tokens: list[Token], index: int) -> str:
    return "a string without its closing quote (no compiler reads it)"


def _directive_verdict(token: Token, tokens: list[Token], index: int) -> str:
    return f"{token.text} {CODE}" if token.text.startswith("`systemc_") else ""


def _word_verdict(token: Token, tokens: list[Token], index: int) -> str:
    if token.text not in ("import", "export"):
        return ""
    after = _next(tokens, index)
    if after is not None and after.kind == "string" and after.text.startswith('"DPI'):
        return f"{token.text} {after.text} calls C code of this machine"
    return ""


VERDICTS: dict[str, Callable[[Token, list[Token], int], str]] = {
    "task": _task_verdict,
    "unterminated": _unterminated_verdict,
    "directive": _directive_verdict,
    "word": _word_verdict,
}


def _tokens(text: str, written: str = "") -> Iterator[Token]:
    """The tokens of preprocessed ``text`` (positions from its ```line`` directives, each
    also a "line" token naming the file it enters), or of the file ``written`` as it is."""
    file, line = written, 1
    for match in TOKENS.finditer(text):
        kind = match.lastgroup or "other"
        if match.group("line") is not None and not written:
            yield Token("line", match.group("file"), file, line)
            file, line = match.group("file"), int(match.group("number"))
            continue
        value = match.group(0)
        if kind not in ("newline", "comment") and not value.isspace():
            yield Token(kind, value, file, line)
        line += value.count("\n")


def _next(tokens: list[Token], index: int) -> Token | None:
    return tokens[index + 1] if index + 1 < len(tokens) else None


def _arguments(tokens: list[Token], index: int) -> list[list[Token]] | None:
    """The arguments of the task call at ``index``, each a token list; None if not a call."""
    opening = _next(tokens, index)
    if opening is None or opening.text != "(":
        return None
    arguments: list[list[Token]] = [[]]
    depth = 0
    for token in tokens[index + 2 :]:
        nesting = _nesting(token)
        if nesting < 0 and depth == 0:
            return arguments
        depth += nesting
        if nesting == 0 and depth == 0 and token.text == ",":
            arguments.append([])
        else:
            arguments[-1].append(token)
    return None


def _nesting(token: Token) -> int:
    """1 for an opening bracket, -1 for a closing one, else 0."""
    if token.kind != "other":
        return 0
    if token.text in "([{":
        return 1
    return -1 if token.text in ")]}" else 0


def _literal(argument: list[Token]) -> str | None:
    if len(argument) == 1 and argument[0].kind == "string":
        return argument[0].text[1:-1]
    return None


def _read_only(arguments: list[list[Token]] | None) -> bool:
    return arguments is not None and len(arguments) == 2 and _literal(arguments[1]) in READ_MODES


def _inside(arguments: list[list[Token]] | None) -> bool:
    path = _literal(arguments[0]) if arguments and len(arguments) == 1 else None
    if path is None or not path or os.path.isabs(path) or path.startswith("~"):
        return False
    return ".." not in re.split(r"[\\/]", path)
