"""YAML for untrusted files: safe tags only, bounded size, depth and alias expansion, positions kept.

Documents are composed into nodes with the safe loader and built here, so every value's
``line:column`` is known and "billion laughs" alias bombs are stopped after a fixed budget.
"""

from __future__ import annotations

import yaml

from brainsmith.errors import BrainsmithError

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass


MAX_BYTES = 1 << 20  # 1 MiB: blueprints and configs are small
MAX_DEPTH = 64
MAX_NODES = 100_000  # values built, aliases counted each time they are expanded

Path = tuple[
    str | int | float | bool | None, ...
]  # a key path such as ("hw_compiler", "kernels", 0)


class YAMLInputError(BrainsmithError):
    """A YAML file that cannot be accepted; the message names file:line:column."""

    def __init__(self, message: str, file: str = "", line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.file, self.line, self.column = file, line, column


def load_yaml_file(path: str) -> object:
    data, _ = load_yaml_with_marks(read_text(path), path)
    return data


def read_text(path: str) -> str:
    """The UTF-8 text of a regular file of at most MAX_BYTES; a problem names its line:column."""
    raw = _read_bytes(path)
    if len(raw) > MAX_BYTES:
        line, column = _position(raw, MAX_BYTES)
        raise YAMLInputError(
            f"{path}:{line}:{column}: the file is larger than {MAX_BYTES // 1024} KiB "
            "(the limit is reached here); refusing to parse",
            path,
            line,
            column,
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _position(raw, exc.start)
        raise YAMLInputError(
            f"{path}:{line}:{column}: not UTF-8 text (byte 0x{raw[exc.start]:02x}); "
            "save the file as UTF-8",
            path,
            line,
            column,
        ) from None


def _read_bytes(path: str) -> bytes:
    """At most MAX_BYTES + 1 bytes of ``path``, which must be a regular file (a FIFO or a
    device is refused without blocking on it)."""
    import os
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise YAMLInputError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise YAMLInputError(f"{path}: cannot read: {file_kind(mode)}, not a regular file")
        chunks, size = [], 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise YAMLInputError(f"{path}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)


def file_kind(mode: int) -> str:
    """``a directory``, ``a FIFO (named pipe)``, ... for an ``st_mode``."""
    import stat

    for test, kind in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "a special file"


def _position(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based (line, column) of byte ``offset``; the column counts characters."""
    start = raw.rfind(b"\n", 0, offset) + 1
    column = len(raw[start:offset].decode("utf-8", errors="replace")) + 1
    return raw.count(b"\n", 0, offset) + 1, column


def load_yaml_with_marks(text: str, path: str) -> tuple[object, dict[Path, tuple[int, int]]]:
    """Parse ``text``; return the data and a map from key path to 1-based (line, column)."""
    if len(text) > MAX_BYTES:
        raise YAMLInputError(f"{path}: document is larger than {MAX_BYTES // 1024} KiB")
    loader_cls = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        _check_shape(text, path, loader_cls)
        node = yaml.compose(text, Loader=loader_cls)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        where = f"{path}:{line}:{column}" if mark else path
        raise YAMLInputError(
            f"{where}: invalid YAML: {exc.problem or exc.context}", path, line, column
        ) from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow, e.g. NUL
        if exc.encoding == "unicode":  # the pure-Python reader counts characters
            offset = len(text[: exc.position].encode("utf-8"))
        else:  # libyaml counts bytes of the UTF-8 text
            offset = exc.position
        line, column = _position(text.encode("utf-8"), offset)
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        what = "a NUL byte" if code == 0 else f"character U+{code:04X}"
        raise YAMLInputError(
            f"{path}:{line}:{column}: invalid YAML: {what} (control characters are not "
            "allowed in YAML text)",
            path,
            line,
            column,
        ) from None
    except yaml.YAMLError as exc:
        raise YAMLInputError(f"{path}: invalid YAML: {exc}") from None
    except RecursionError:
        raise YAMLInputError(f"{path}: YAML nested too deeply") from None
    marks: dict[Path, tuple[int, int]] = {}
    if node is None:
        return None, marks
    builder = _Builder(path, marks)
    return builder.build(node, (), 0), marks


def _check_shape(text: str, path: str, loader_cls: type) -> None:
    """Bound nesting and size on the event stream before composing: libyaml's composer
    recurses in C (100,000 ``[`` overflow the stack) and builds every node of a document."""
    depth = 0
    for events, event in enumerate(yaml.parse(text, Loader=loader_cls), 1):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise _at(path, event, f"nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        if events > MAX_NODES:
            raise _at(path, event, f"more than {MAX_NODES} values; refusing to parse")


def _at(path: str, event: yaml.Event, message: str) -> YAMLInputError:
    mark = event.start_mark
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)

    return YAMLInputError(f"{path}:{line}:{column}: {message}", path, line, column)


_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"


class _Builder:
    def __init__(self, path: str, marks: dict[Path, tuple[int, int]]) -> None:
        self.loader = yaml.SafeLoader("")
        self.path = path
        self.marks = marks
        self.count = 0

    def fail(self, node: yaml.Node, message: str) -> YAMLInputError:
        line, column = node.start_mark.line + 1, node.start_mark.column + 1
        return YAMLInputError(f"{self.path}:{line}:{column}: {message}", self.path, line, column)

    def build(self, node: yaml.Node, key_path: Path, depth: int) -> object:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(node, f"more than {MAX_NODES} values (alias expansion bomb?)")
        if depth > MAX_DEPTH:
            raise self.fail(node, f"nested deeper than {MAX_DEPTH} levels")
        self.marks.setdefault(key_path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node)
        if node.tag not in (_SEQ, _MAP):
            raise self.fail(node, f"tag {node.tag!r} is not allowed (only plain YAML data)")
        if isinstance(node, yaml.SequenceNode):
            return [
                self.build(item, (*key_path, i), depth + 1) for i, item in enumerate(node.value)
            ]
        if isinstance(node, yaml.MappingNode):
            result: dict[object, object] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    raise self.fail(key_node, "merge keys ('<<') are not supported")
                key = self.build(key_node, (*key_path, "<key>"), depth + 1)
                if not isinstance(key, str | int | float | bool) and key is not None:
                    raise self.fail(key_node, "mapping keys must be plain scalars")
                if key in result:
                    raise self.fail(key_node, f"duplicate key {key!r}")
                result[key] = self.build(value_node, (*key_path, key), depth + 1)
            return result
        raise self.fail(node, "unsupported YAML node")

    def scalar(self, node: yaml.ScalarNode) -> object:
        tag = node.tag
        if not tag.startswith("tag:yaml.org,2002:"):
            raise self.fail(node, f"tag {tag!r} is not allowed (only plain YAML data)")
        constructor = yaml.SafeLoader.yaml_constructors.get(tag)
        if constructor is None or tag in ("tag:yaml.org,2002:binary",):
            if tag == "tag:yaml.org,2002:str":
                return node.value
            raise self.fail(node, f"tag {tag!r} is not allowed here")
        try:
            return constructor(self.loader, node)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
            raise self.fail(node, f"invalid value {node.value!r}: {exc}") from None
        except Exception:  # PyYAML's constructors assume well-formed text for explicit tags
            short = tag.rpartition(":")[2]
            raise self.fail(node, f"invalid value {node.value!r} for !!{short}") from None
