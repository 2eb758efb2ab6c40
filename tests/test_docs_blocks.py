"""Every fenced code block of README.md and docs/*.md is accounted for and runs as written, from
a temporary folder outside the clone.

Each document's blocks run in order in one folder of its own, so a block may use what an
earlier block of the same document wrote. The folder holds symbolic links to the clone's
``examples/`` and ``blueprints/``, for blocks that use the shipped files, and nothing else of
the clone (docs/blueprints.md's board example also finds an empty ``folding.json`` there).

- ``python``: run in a fresh interpreter. A block whose first line is ``# file: PATH`` is
  written to PATH instead. ``<!-- continues -->`` on the line before the fence runs the block
  in the same interpreter as the document's python block before it. A comment after a
  ``print(...)`` shows what it prints: ``# -> OUTPUT`` is compared with the printed lines (in
  order; ``...`` stands for any text, for what varies), ``# e.g. OUTPUT`` is illustrative, and
  any other comment there fails. A block not run that shows output names in its marker the
  test that compares it.
- ``sh``/``bash``: line by line. ``make TARGET`` is not run (the target must exist),
  ``. FILE`` activates a file of the clone (it must exist), ``xdg-open FILE`` is not run (the
  file must exist), ``export VAR=VALUE`` sets VAR for the document's later blocks; any other
  line runs in bash with the virtualenv's ``bin/`` first on PATH (HOME is the folder, but for
  ``brainsmith`` lines) and must exit 0, or N when the line says ``# exit code N``; a
  ``brainsmith`` line with no shell syntax runs in the test's process instead, as the command
  would (``tests.support.processes.invoke``). A line with
  a placeholder (``MODEL``, ``[...]``, ``a|b``) is a synopsis: its block is fenced ``text``.
- ``yaml``: a blueprint (only top-level keys of the format) is written and checked with
  ``brainsmith blueprint validate``; one that starts ``# expect-error: MESSAGE`` must fail
  with that message. A block that starts ``# blueprints/NAME.yaml`` is an excerpt of that
  shipped file, which is validated. Other YAML is parsed, as is ``toml``.
- ``console``, ``text`` and unlabelled blocks are output or synopses, not run. A console block
  that shows a command's output says on the line before the fence
  ``<!-- output compared by tests/NAME.py -->``, a test that compares it with the real output
  and names the document, or ``<!-- output illustrative: REASON -->``.
- ``<!-- not run: REASON -->`` on the line before the fence: not run, for that reason.

A command or python block run again on a folder in the same state (README's quick start and
docs/your-network.md) is run once: its result and the files it wrote are reused.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tokenize
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from brainsmith.blueprint.schema import TOP_KEYS
from tests.conftest import REPO
from tests.support.processes import invoke
from tests.test_make_targets import targets

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("docs")]

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent
TIMEOUT = 600  # seconds per command or python block
FENCE = re.compile(r"( *)(`{3,}|~{3,})([\w+-]*)\s*")
MARKER = re.compile(r"\s*<!-- (continues|not run: .+?|output .+?) -->\s*")
SHELL = {"sh", "bash", "shell"}
OUTPUT = {"console", "text", ""}
PLACEHOLDER = re.compile(r"[A-Z][A-Z0-9_]*(\.[a-z]+)?|.*[\[\]|].*|.*\.\.\..*")
NOT_RUN_HERE = {"pip", "pip3", "cd", "sudo"}
FIXTURES = {"blueprints.md": {"folding.json": "{}\n"}}


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int  # the body's first line, 1-based
    lang: str
    body: str
    marker: str  # "", "continues", "not run: REASON" or "output ..." (of a console block)

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line - 1}"

    @property
    def file(self) -> str | None:
        first = self.body.partition("\n")[0]
        return first.removeprefix("# file: ").strip() if first.startswith("# file: ") else None

    @property
    def kind(self) -> str:
        """run, file, validated, output, not run or unknown."""
        if self.marker.startswith("not run"):
            return "not run"
        if self.lang in OUTPUT:
            return "output"
        if self.lang == "python":
            return "file" if self.file else "run"
        if self.lang in SHELL:
            return "run"
        return "validated" if self.lang in {"yaml", "toml"} else "unknown"


def fences(lines: list[str]) -> list[tuple[int, int, str, str]]:
    """(opening line, closing line, indentation, language) of each fenced block, 0-based."""
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.fullmatch(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence, lang = opening.groups()
        closing = re.compile(rf"\s*{re.escape(fence[0])}{{{len(fence)},}}\s*")
        end = next(j for j in range(i + 1, len(lines)) if closing.fullmatch(lines[j]))
        found.append((i, end, indent, lang))
        i = end + 1
    return found


def blocks(doc: Path) -> list[Block]:
    """Every fenced block of ``doc``, its body without the fence's indentation."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    found = []
    for start, end, indent, lang in fences(lines):
        body = "\n".join(line.removeprefix(indent) for line in lines[start + 1 : end]) + "\n"
        marker = MARKER.fullmatch(lines[start - 1]) if start else None
        found.append(Block(doc, start + 2, lang, body, marker[1] if marker else ""))
    return found


def prose(doc: Path) -> list[str]:
    """The lines of ``doc`` outside its fenced blocks."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    for start, end, _, _ in reversed(fences(lines)):
        del lines[start : end + 1]
    return lines


def all_blocks() -> list[Block]:
    return [block for doc in DOCS for block in blocks(doc)]


def commands(block: Block) -> list[tuple[int, str]]:
    """(line number, command) of a shell block: continued lines joined, comments skipped."""
    found, pending, start = [], "", 0
    for offset, line in enumerate(block.body.splitlines()):
        start = start if pending else block.line + offset
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        text, pending = (pending + line).strip(), ""
        if text and not text.startswith("#"):
            found.append((start, text))
    return found


def problem(command: str) -> str | None:
    """Why a command of an unmarked shell block cannot be run as written, or None."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError as err:
        return f"cannot parse it: {err}"
    holders = [word for word in words if PLACEHOLDER.fullmatch(word)]
    if holders:
        return f"{holders[0]!r} is a placeholder: a synopsis, fence the block as ```text"
    if words[0] in NOT_RUN_HERE:
        return f"{words[0]} is not run by this test: mark the block <!-- not run: REASON -->"
    return None


def expected_code(command: str) -> int:
    said = re.search(r"#\s*exit code (\d+)(:|\s*$)", command)
    return int(said[1]) if said else 0


def chains(doc_blocks: list[Block]) -> list[list[Block]]:
    """The runnable python blocks, grouped: a block marked ``continues`` joins the group before."""
    groups: list[list[Block]] = []
    for block in doc_blocks:
        if block.lang == "python" and block.kind == "run":
            if block.marker == "continues" and groups:
                groups[-1].append(block)
            else:
                groups.append([block])
    return groups


@dataclass(frozen=True)
class Shown:
    """A ``print(...)`` line of a python block with a comment after it."""

    where: str  # the document and line
    call: str  # the print call
    comment: str

    @property
    def output(self) -> str | None:
        """The output the comment shows, or None for a comment that does not say ``# -> ``."""
        arrow = re.fullmatch(r"#\s*->\s?(.*)", self.comment)
        return arrow[1].rstrip() if arrow else None

    @property
    def illustrative(self) -> bool:
        return self.comment.startswith("# e.g.")


def shown(block: Block) -> list[Shown]:
    """Each ``print(...)`` statement of the python block with a comment on its last line."""
    try:
        tree = ast.parse(block.body)
        tokens = list(tokenize.generate_tokens(io.StringIO(block.body).readline))
    except (SyntaxError, tokenize.TokenError):
        return []
    comments = {t.start[0]: t.string for t in tokens if t.type == tokenize.COMMENT}
    doc, found = block.doc.relative_to(REPO), []
    for node in ast.walk(tree):
        call = node.value if isinstance(node, ast.Expr) else None
        end = getattr(node, "end_lineno", None) or 0
        is_print = isinstance(call, ast.Call) and getattr(call.func, "id", "") == "print"
        if is_print and (comment := comments.get(end)):
            code = ast.get_source_segment(block.body, node) or ""
            found.append(Shown(f"{doc}:{block.line + end - 1}", code, comment))
    return sorted(found, key=lambda item: int(item.where.rpartition(":")[2]))


def matches(output: str, line: str) -> bool:
    """Whether a printed ``line`` is the shown ``output``, ``...`` standing for any text."""
    pattern = ".*".join(re.escape(part) for part in output.split("..."))
    return re.fullmatch(pattern, line.rstrip()) is not None


def output_problems(said: list[Shown], stdout: str) -> list[str]:
    """Where the shown outputs (``# -> ``) are not printed, in their order, in ``stdout``."""
    printed, problems, at = stdout.splitlines(), [], 0
    for item in said:
        if item.output is None:
            continue
        found = next((i for i in range(at, len(printed)) if matches(item.output, printed[i])), None)
        if found is None:
            rest = "\n".join(printed[at:]) or "(nothing)"
            problems.append(f"{item.where}: shows {item.output!r}; printed:\n{rest}")
        else:
            at = found + 1
    return problems


def printed(block: Block, namespace: dict[str, object]) -> str:
    """What the block's print lines that show output print, run in ``namespace``: for a block
    not run, compared with the values of a run made elsewhere."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for item in shown(block):
            if item.output is not None:
                exec(item.call, dict(namespace))
    return out.getvalue()


def script(chain: list[Block]) -> str:
    """The chain's code, each block at its line of the document (so tracebacks name them)."""
    code = ""
    for block in chain:
        code += "\n" * (block.line - 1 - code.count("\n")) + block.body
    return code


# -- running a document -------------------------------------------------------------------


def snapshot(folder: Path) -> dict[str, str]:
    """Each file and link under ``folder`` (links not followed), by content."""
    state = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root, name)
            if path.is_symlink():
                state[str(path.relative_to(folder))] = "-> " + os.readlink(path)
            elif path.is_file():
                state[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


def execute(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``argv`` to its end, in a session of its own that is killed after TIMEOUT seconds; a
    ``brainsmith`` command in this process (``tests.support.processes.invoke``), as a user's
    shell would run it but without starting Python and importing FINN again."""
    if Path(argv[0]).name == "brainsmith":
        added = {k: v for k, v in env.items() if os.environ.get(k) != v and k != "PATH"}
        ran = invoke(*argv[1:], env=added, cwd=cwd)
        return subprocess.CompletedProcess(argv, ran.returncode, ran.stdout, ran.stderr)
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n(killed after {TIMEOUT} s)"
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@dataclass
class Memo:
    folder: Path
    changed: list[str]
    result: subprocess.CompletedProcess


MEMO: dict[tuple, Memo] = {}


@dataclass
class DocRun:
    doc: Path
    folder: Path
    env: dict[str, str] = field(default_factory=dict)  # the document's exports
    failures: list[str] = field(default_factory=list)

    def run(self) -> DocRun:
        doc_blocks = blocks(self.doc)
        first = {chain[0].line: chain for chain in chains(doc_blocks)}
        handlers = {"yaml": self.yaml, "toml": self.toml, **dict.fromkeys(SHELL, self.shell)}
        for block in doc_blocks:
            if block.line in first:
                self.python(first[block.line])
            elif block.kind == "file":
                self.write(block)
            elif block.kind in {"run", "validated"} and block.lang in handlers:
                handlers[block.lang](block)
        return self

    def step(
        self, argv: list[str], home: bool = False, same: str = ""
    ) -> subprocess.CompletedProcess:
        """Run ``argv`` in the folder, or reuse the run of the same (``argv``, or ``same`` when
        given) on a folder like it."""
        env = {**os.environ, **self.env, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
        if home:
            env["HOME"] = str(self.folder)
        before = snapshot(self.folder)
        state = hashlib.sha256(repr(sorted(before.items())).encode()).hexdigest()
        key = (same or tuple(argv), tuple(sorted(self.env.items())), home, state)
        memo = MEMO.get(key)
        if memo is None:
            result = execute(argv, self.folder, env)
            after = snapshot(self.folder)
            changed = sorted(path for path, digest in after.items() if before.get(path) != digest)
            memo = MEMO[key] = Memo(self.folder, changed, result)
        elif memo.folder != self.folder:
            for path in memo.changed:
                copy(memo.folder / path, self.folder / path)
        return memo.result

    def expect(self, result: subprocess.CompletedProcess, code: int, where: str, what: str):
        if result.returncode != code:
            self.failures.append(
                f"{where}: {what}\nexit code {result.returncode}, expected {code}\n"
                f"{result.stdout[-2000:]}{result.stderr[-3000:]}"
            )

    def python(self, chain: list[Block]) -> None:
        same = "".join(block.body for block in chain)  # the code wherever it stands
        result = self.step([sys.executable, "-c", script(chain)], same=same)
        lines = "+".join(str(block.line - 1) for block in chain)
        self.expect(result, 0, chain[0].where, f"python block (line {lines})")
        said = [item for block in chain for item in shown(block)]
        for issue in output_problems(said, result.stdout) if result.returncode == 0 else []:
            self.failures.append(f"python block (line {lines}), {issue}")

    def write(self, block: Block, name: str | None = None) -> None:
        """The block as the file its first line names (or ``name``), inside the folder."""
        path = self.folder / (name or block.file)
        if not path.resolve().is_relative_to(self.folder.resolve()):
            self.failures.append(f"{block.where}: {path.name} would be written outside the folder")
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.body)

    def shell(self, block: Block) -> None:
        rel = self.doc.relative_to(REPO)
        for line, command in commands(block):
            where, words = f"{rel}:{line}", shlex.split(command, comments=True)
            if issue := problem(command):
                self.failures.append(f"{where}: {command}\n{issue}")
            elif words[0] in {"make", ".", "source"}:
                continue  # checked without running: test_make_and_activate_lines_name_real_things
            elif words[0] in {"xdg-open", "open"}:
                if not (self.folder / words[1]).is_file():
                    self.failures.append(f"{where}: {command}\nno file {words[1]} to open")
            elif words[0] == "export":
                self.export(words[1:])
            else:
                plain = words[0] == "brainsmith" and not shell_syntax(command)
                argv = [str(BIN / "brainsmith"), *words[1:]] if plain else ["bash", "-c", command]
                result = self.step(argv, words[0] != "brainsmith", same=shlex.join(words))
                self.expect(result, expected_code(command), where, command)

    def export(self, assignments: list[str]) -> None:
        for assignment in assignments:
            name, _, value = assignment.partition("=")
            home = value.startswith("~/")
            self.env[name] = str(self.folder / value[2:]) if home else value

    def yaml(self, block: Block) -> None:
        try:
            data = yaml.safe_load(block.body)
        except yaml.YAMLError as err:
            self.failures.append(f"{block.where}: not YAML: {err}")
            return
        shipped = re.match(r"# (blueprints/\S+\.yaml)\n", block.body)
        if shipped:
            real = yaml.safe_load((REPO / shipped[1]).read_text())
            if not isinstance(data, dict) or {key: real.get(key) for key in data} != data:
                self.failures.append(f"{block.where}: differs from the shipped {shipped[1]}")
            self.validate(block, shipped[1])
        elif isinstance(data, dict) and data and set(data) <= set(TOP_KEYS):
            name = block.file or f"example-{block.line - 1}.yaml"
            self.write(block, name)
            self.validate(block, name)
        elif block.file:
            self.write(block)

    def validate(self, block: Block, name: str) -> None:
        expected = re.match(r"# expect-error: (.+)\n", block.body)
        result = self.step([str(BIN / "brainsmith"), "blueprint", "validate", name])
        self.expect(
            result, 1 if expected else 0, block.where, f"brainsmith blueprint validate {name}"
        )
        if expected and expected[1] not in result.stdout + result.stderr:
            self.failures.append(f"{block.where}: no error {expected[1]!r}:\n{result.stderr}")

    def toml(self, block: Block) -> None:
        try:
            tomllib.loads(block.body)
        except tomllib.TOMLDecodeError as err:
            self.failures.append(f"{block.where}: not TOML: {err}")
        if block.file:
            self.write(block)


def shell_syntax(command: str) -> bool:
    """Whether ``command`` (its comment aside) needs a shell: an operator, a redirection, a
    substitution, a glob or a home folder."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.commenters = "#"
    return any(set(token) & set("();<>|&$`*?[~{") for token in lexer)


def copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_symlink():
        target.unlink(missing_ok=True)
        target.symlink_to(os.readlink(source))
    elif source.is_file():
        shutil.copy2(source, target)


RUNS: dict[Path, DocRun] = {}


def doc_run(doc: Path, tmp_path_factory) -> DocRun:
    """``doc``'s blocks run in a folder of their own, once per test process."""
    if doc not in RUNS:
        folder = tmp_path_factory.mktemp(f"docs-{doc.stem}")
        assert not folder.resolve().is_relative_to(REPO)
        for name in ("examples", "blueprints"):
            (folder / name).symlink_to(REPO / name)
        for name, text in FIXTURES.get(doc.name, {}).items():
            (folder / name).write_text(text)
        RUNS[doc] = DocRun(doc, folder).run()
    return RUNS[doc]


# -- tests ---------------------------------------------------------------------------------


def test_every_block_is_accounted_for():
    found = all_blocks()
    assert len(found) > 100
    unknown = [f"{b.where}: ```{b.lang}" for b in found if b.kind == "unknown"]
    assert unknown == [], "blocks of a language this test does not know"
    runnable = {id(block) for chain in chains(found) for block in chain}
    orphans = [b.where for b in found if b.marker == "continues" and id(b) not in runnable]
    assert orphans == [], "<!-- continues --> only on a python block that is run"
    issues = [
        f"{block.doc.relative_to(REPO)}:{line}: {command}\n  {issue}"
        for block in found
        if block.lang in SHELL and block.kind == "run"
        for line, command in commands(block)
        if (issue := problem(command))
    ]
    assert issues == [], "\n".join(issues)


def test_shown_output_is_compared():
    """Every output a python block shows after a ``print(...)`` is ``# -> OUTPUT``, compared
    with what the block prints, or ``# e.g. OUTPUT``, illustrative; a block not run that shows
    output names in its marker a test that compares it (one that calls ``output_problems`` and
    names the document)."""
    wrong = []
    for block in all_blocks():
        if block.lang != "python":
            continue
        for item in shown(block):
            if item.output is None and not item.illustrative:
                wrong.append(
                    f"{item.where}: {item.comment!r} after a print: "
                    "write the output as '# -> OUTPUT' (compared) or '# e.g. OUTPUT' (illustrative)"
                )
        if block.kind == "run" or all(item.output is None for item in shown(block)):
            continue
        if not names_a_test_of(block.marker, block.doc, "output_problems"):
            wrong.append(
                f"{block.where}: shows output but is not run and names no test comparing it"
            )
    assert wrong == [], "\n".join(wrong)


def shows_output(console: str) -> bool:
    """Whether a console block shows output after a ``$ `` command (not only commands)."""
    continued = False
    for line in console.splitlines():
        if line.startswith("$ ") or continued:
            continued = line.rstrip().endswith("\\")
        elif line.strip():
            return True
    return False


def names_a_test_of(marker: str, doc: Path, needs: str = "") -> bool:
    """Whether ``marker`` names a test file of the clone that names ``doc`` (and ``needs``)."""
    for name in re.findall(r"tests/\w+\.py", marker):
        text = (REPO / name).read_text() if (REPO / name).is_file() else ""
        if doc.name in text and needs in text:
            return True
    return False


def test_console_output_is_compared_or_illustrative():
    """A console block that shows output names the test comparing it with the real output, or
    says it is illustrative and why."""
    wrong = [
        f"{block.where}: shows output: mark it <!-- output compared by tests/NAME.py --> "
        "or <!-- output illustrative: REASON -->"
        for block in all_blocks()
        if block.lang == "console"
        and shows_output(block.body)
        and not block.marker.startswith("output illustrative: ")
        and not (
            block.marker.startswith("output compared by ")
            and names_a_test_of(block.marker, block.doc)
        )
    ]
    assert wrong == [], "\n".join(wrong)


def test_make_and_activate_lines_name_real_things():
    """``make TARGET`` lines name Makefile targets, ``. FILE`` lines files of the clone; in
    every shell block, run or not."""
    known, wrong = targets(), []
    for block in all_blocks():
        if block.lang not in SHELL:
            continue
        for line, command in commands(block):
            words = shlex.split(command, comments=True)
            if words[0] == "make":
                wanted = [word for word in words[1:] if "=" not in word and word[0] != "-"]
                wrong += [f"{block.doc.name}:{line}: make {t}" for t in wanted if t not in known]
            elif words[0] in {".", "source"} and not (REPO / words[1]).is_file():
                wrong.append(f"{block.doc.name}:{line}: no {words[1]} in the clone")
    assert wrong == []


# Documents whose blocks run beside the tests they share a tool cache with (on that worker
# the run's cache serves the second): synthesis.md's Yosys runs are tests/test_synthesis.py's.
RUN_ELSEWHERE = {"synthesis.md": "tests/test_synthesis.py"}


@pytest.mark.parametrize(
    "doc", [d for d in DOCS if d.name not in RUN_ELSEWHERE], ids=lambda path: path.name
)
def test_the_blocks_of_the_document_run(doc, tmp_path_factory):
    run = doc_run(doc, tmp_path_factory)
    assert run.failures == [], "\n\n".join(run.failures)


def test_a_document_run_elsewhere_is_run_there():
    for name, module in RUN_ELSEWHERE.items():
        assert f'doc_run(REPO / "docs" / "{name}"' in (REPO / module).read_text(), name


# -- output shown in the docs, against the real output ---------------------------------------


def block_with(doc: Path, lang: str, text: str) -> str:
    (body,) = [block.body for block in blocks(doc) if block.lang == lang and text in block.body]
    return body


def transcript(console: str) -> list[tuple[str, list[str]]]:
    """(command, the output lines shown after it) of each ``$ `` line of a console block."""
    found: list[tuple[str, list[str]]] = []
    for line in console.splitlines():
        if line.startswith("$ "):
            found.append((line[2:], []))
        elif found and line.strip() != "...":
            found[-1][1].append(line)
    return found


def test_the_build_summary_and_results_in_build_md_are_the_shipped_mlps(tmp_path_factory):
    """docs/build.md's summary of the shipped MLP's build, and the values its python example
    comments, are those of the build that example makes (out/mlp)."""
    doc = REPO / "docs" / "build.md"
    report = json.loads((doc_run(doc, tmp_path_factory).folder / "out/mlp/report.json").read_text())
    shown = block_with(doc, "console", "mlp_4bit.onnx blueprints/mlp.yaml -o out/mlp")
    resources = re.findall(r"(LUT|BRAM_18K|URAM|DSP) (?:at least )?([\d,]+) \(", shown)
    assert {name: int(n.replace(",", "")) for name, n in resources} == report["totals"]
    performance = report["performance"]
    fps = re.search(r"throughput +([\d,]+) fps", shown)[1]
    assert int(fps.replace(",", "")) == performance["estimated_fps"]
    latency = re.search(r"latency +([\d.]+) µs", shown)[1]
    assert float(latency) == round(performance["estimated_latency_ns"] / 1000, 2)
    statuses = [step["status"] for step in report["steps"]]
    ran, skipped = map(int, re.search(r"(\d+) steps run, (\d+) skipped", shown).groups())
    assert (ran, skipped) == (len(statuses) - statuses.count("skipped"), statuses.count("skipped"))
    example = block_with(doc, "python", 'result = brainsmith.build("examples/models/mlp_4bit.onnx"')
    result = type("Result", (), {key: report[key] for key in ("status", "performance", "totals")})
    said = re.findall(r"^(result\.\S+)\s+# ([\"{\d].*)$", example, re.M)
    assert len(said) >= 3
    for expression, value in said:
        assert eval(expression, {"result": result}) == ast.literal_eval(value), expression


def test_the_python_examples_of_build_md_leave_what_they_say(tmp_path_factory):
    """docs/build.md's python examples, run once above, leave what the text around them says:
    a reopened build runs 8 inputs into 8 outputs of 10 classes, FINN's own builder writes its
    per-layer estimates, and the A2Q export with its weights baked computes what torch did."""
    import numpy as np

    from brainsmith.builder import BuildResult
    from examples.zoo import verify

    folder = doc_run(REPO / "docs" / "build.md", tmp_path_factory).folder
    assert len([b for b in blocks(REPO / "docs" / "build.md") if b.lang == "python"]) == 4
    x = np.random.default_rng(0).uniform(-1, 1, size=(8, 64)).astype(np.float32)
    assert BuildResult.load(folder / "out" / "mlp").run(x).shape == (8, 10)
    assert (folder / "out/finn/report/estimate_layer_resources.json").is_file()
    assert verify(folder / "espcn_a2q.onnx") == 0.0


def test_the_validate_output_in_blueprints_md_is_real(tmp_path_factory):
    """The lines docs/blueprints.md shows ``brainsmith blueprint validate`` print are printed,
    for its own example (my-mlp.yaml) and the shipped blueprints."""
    doc = REPO / "docs" / "blueprints.md"
    run = doc_run(doc, tmp_path_factory)
    checked = 0
    for block in blocks(doc):
        for command, shown in transcript(block.body) if block.lang == "console" else []:
            if command.startswith("brainsmith blueprint validate") and shown:
                result = run.step(["bash", "-c", command])
                printed = (result.stdout + result.stderr).splitlines()
                assert [line for line in shown if line not in printed] == [], printed
                checked += len(shown)
    assert checked >= 2


def test_the_quick_start_is_one_sequence_that_builds_with_the_exported_vectors(tmp_path_factory):
    """README's quick start and docs/your-network.md export the same network and run the same
    commands; the build checks the exported vectors and writes the report the README opens."""
    readme, walk = REPO / "README.md", REPO / "docs" / "your-network.md"

    def export(doc: Path) -> list[str]:
        return [block.body for block in blocks(doc) if "export_qonnx(" in block.body]

    def said(doc: Path) -> list[list[str]]:
        return [
            shlex.split(command, comments=True)
            for block in blocks(doc)
            if block.lang in SHELL
            for _, command in commands(block)
            if command.startswith("brainsmith ")
        ]

    assert len(export(walk)) == 1 and export(readme) == export(walk)
    shown = said(readme)
    assert said(walk) and all(words in shown for words in said(walk))
    build = doc_run(readme, tmp_path_factory).folder / "my_net_build"
    report = json.loads((build / "report.json").read_text())
    assert report["status"] == "ok" and (build / "report.html").is_file()
    mine = [step["verification"]["user"] for step in report["steps"] if step.get("verification")]
    assert mine and all(check["ok"] and check["samples"] == 8 for check in mine)


def test_what_the_quick_start_says_it_verifies_is_what_its_build_verified(tmp_path_factory):
    """README and docs/your-network.md say the quick start's build checks the final model (not
    every step) and name ``--verify each``; the cost of that option they quote is the last run of
    ``benchmarks.quick_start_verify``, with the steps that run verified."""
    readme, walk = REPO / "README.md", REPO / "docs" / "your-network.md"
    for doc in (readme, walk):
        text = " ".join(prose(doc))
        assert "every step checked" not in text and "checks every build step" not in text
        assert "the final model" in text and "`--verify each`" in text
    build = doc_run(readme, tmp_path_factory).folder / "my_net_build"
    report = json.loads((build / "report.json").read_text())
    assert report["verify"] == "final"
    assert [step["name"] for step in report["steps"] if step.get("verification")] == [
        next(step["name"] for step in reversed(report["steps"]) if step.get("verification"))
    ]
    data = json.loads((REPO / "benchmarks" / "results" / "quick_start_verify.json").read_text())
    final, each = data["final"], data["each"]
    text = " ".join(prose(walk))
    said = re.search(
        r"`--verify each` took ([\d.]+) s of CPU against ([\d.]+) s for the default and ([\d.]+) s of "
        r"checks against ([\d.]+) s; wall ([\d.]+) s against ([\d.]+) s \(medians of (\d+) fresh "
        r"processes each, on (\d+) cores at a 1-minute load average of ([\d.]+) from other work, "
        r"which spread the wall times over ([\d.]+)\u2013([\d.]+) s",
        text,
    )
    assert said, "docs/your-network.md quotes no cost of --verify each"
    load = data["load"]["load_1min_during"]["mean"]
    walls = [run["wall_s"] for mode in (final, each) for run in mode["runs"]]
    assert said.groups() == (
        f"{each['cpu_s']:.1f}", f"{final['cpu_s']:.1f}", f"{each['verify_s']:.2f}",
        f"{final['verify_s']:.2f}", f"{each['wall_s']:.1f}", f"{final['wall_s']:.1f}",
        str(data["runs"]), str(data["machine"]["cpu_count"]), f"{load:.1f}",
        f"{min(walls):.1f}", f"{max(walls):.1f}",
    )  # fmt: skip
    steps = re.search(r"each of (\d+) steps run \((\d+) unchanged, not re-run\)", text)
    first = each["runs"][0]
    assert steps and (int(steps[1]), int(steps[2])) == (
        first["verified_steps"], first["verified_steps"] - first["run_again"]
    )  # fmt: skip
    assert final["runs"][0]["verified_steps"] == 1


def test_the_key_file_made_as_operations_md_says_is_one_brainsmith_takes(tmp_path_factory):
    from brainsmith.plugin.discovery.shared_index import load_key

    run = doc_run(REPO / "docs" / "operations.md", tmp_path_factory)
    assert len(load_key(run.env["BRAINSMITH_CACHE_KEY_FILE"])) == 64


# -- links -------------------------------------------------------------------------------


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(doc: Path) -> set[str]:
    """GitHub's anchors for the headings of ``doc`` (a repeated one gets -1, -2 ...)."""
    found, seen = set(), Counter()
    for line in prose(doc):
        if re.match(r"#{1,6} ", line):
            slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            found.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
            seen[slug] += 1
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: path.name)
def test_every_relative_link_points_to_a_file_and_heading(doc):
    text, broken = re.sub(r"`[^`]*`", "", "\n".join(prose(doc))), []  # code spans hold no links
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        linked = (doc.parent / path) if path else doc
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no such heading")
    assert broken == []
