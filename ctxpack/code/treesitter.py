"""Symbol units parsed with tree-sitter: one grammar package per language, one query per
language for the calls, type uses and imports."""

from __future__ import annotations

import bisect
import importlib
import re
from collections.abc import Iterable
from functools import cache
from typing import Any

from .blocks import parses, without_broken_blocks
from .fallback import call_names
from .terms import identifiers
from .units import ParsedFile, Symbol, module_units, unique

__all__: list[str] = []

# language -> (grammar module, function returning the language pointer)
_GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
}

_JS_DEFS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "abstract_class_declaration": "class",
    "method_definition": "method",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "type",
}
# node type -> kind, per language.
_DEFINITIONS: dict[str, dict[str, str]] = {
    "python": {"function_definition": "function", "class_definition": "class"},
    "javascript": _JS_DEFS,
    "typescript": _JS_DEFS,
    "tsx": _JS_DEFS,
    "go": {
        "function_declaration": "function",
        "method_declaration": "method",
        "type_spec": "type",
    },
    "rust": {
        "function_item": "function",
        "struct_item": "type",
        "enum_item": "type",
        "union_item": "type",
        "trait_item": "interface",
        "impl_item": "impl",
        "mod_item": "module",
        "macro_definition": "function",
    },
    "java": {
        "class_declaration": "class",
        "interface_declaration": "interface",
        "enum_declaration": "type",
        "record_declaration": "class",
        "method_declaration": "method",
        "constructor_declaration": "method",
    },
}
# Definitions whose body holds member definitions, each made a unit of its own.
_CONTAINERS = frozenset(
    {"class_definition", "class_declaration", "abstract_class_declaration", "impl_item"}
    | {"enum_declaration", "record_declaration", "mod_item"}
)
# Nodes that wrap a definition without being one (decorators, export, Go's type groups).
_WRAPPERS = frozenset(
    {"decorated_definition", "export_statement", "type_declaration", "ambient_declaration"}
)
_JS = frozenset({"javascript", "typescript", "tsx"})
_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})
_IMPORTS: dict[str, frozenset[str]] = {
    "python": frozenset({"import_statement", "import_from_statement"}),
    "javascript": frozenset({"import_statement"}),
    "typescript": frozenset({"import_statement"}),
    "tsx": frozenset({"import_statement"}),
    "go": frozenset({"import_spec"}),
    "rust": frozenset({"use_declaration", "mod_item"}),
    "java": frozenset({"import_declaration"}),
}
_CALLS = frozenset(
    {"call", "call_expression", "method_invocation", "new_expression"}
    | {"object_creation_expression", "macro_invocation"}
)
_TYPE_NAMES = frozenset({"type_identifier"})
_NAME_NODES = frozenset(
    {"identifier", "property_identifier", "field_identifier", "type_identifier"}
    | {"scoped_identifier", "attribute", "member_expression", "selector_expression"}
    | {"scoped_type_identifier", "generic_type"}
)


@cache
def _query(language: str) -> Any:
    """A query capturing the calls, type uses and imports of ``language`` (its C engine finds
    them much faster than a walk over every node in Python)."""
    import tree_sitter

    grammar = parser_for(language).language
    wanted = {"ref": _CALLS | _TYPE_NAMES, "imp": _IMPORTS[language]}
    patterns = [
        f"({kind}) @{capture}"
        for capture, kinds in wanted.items()
        for kind in sorted(kinds)
        if grammar.id_for_node_kind(kind, True) is not None
    ]
    return tree_sitter.Query(grammar, " ".join(patterns))


@cache
def parser_for(language: str) -> Any:
    """A tree-sitter parser of ``language``, or ``None`` without tree-sitter or its grammar."""
    spec = _GRAMMARS.get(language)
    if spec is None:
        return None
    try:
        import tree_sitter

        grammar = importlib.import_module(spec[0])
    except ImportError:
        return None
    return tree_sitter.Parser(tree_sitter.Language(getattr(grammar, spec[1])()))


# An error node with more children than this is queried one child at a time (see _captures).
_WIDE_ERROR = 64


def _captures(query: Any, root: Any) -> dict[str, list[Any]]:
    """The nodes ``query`` captures under ``root``, by capture name.

    Error recovery nests the children of an error node (a run of unclosed brackets) in a
    chain of hidden nodes as long as the run, and tree-sitter's query cursor walks that chain
    again at each child: 80,000 "[" took 10 s. Each child of a wide error node is queried on
    its own instead, from a cursor that starts below the chain; a leaf of punctuation is
    skipped, no pattern captures one. The error node itself is no call, type or import.
    """
    import tree_sitter

    found: dict[str, list[Any]] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error and node.child_count > _WIDE_ERROR:
            stack.extend(c for c in node.children if c.is_named or c.child_count)
            continue
        for name, nodes in tree_sitter.QueryCursor(query).captures(node).items():
            found.setdefault(name, []).extend(nodes)
    return found


def _span(node: Any) -> tuple[int, int]:
    return int(node.start_byte), int(node.end_byte)


def _text(node: Any) -> str:
    return bytes(node.text).decode("utf-8", errors="replace")


_OPENING = frozenset({"(", "[", "{"})


def _parse(parser: Any, data: bytes, language: str) -> tuple[Any, bytes]:
    """``data``'s tree, read again without the brackets that cost it its definitions.

    tree-sitter's recovery from a run of unclosed brackets (broken or generated code) makes an
    error node of all that follows, the definitions after the run with it: ``def f(x):`` there
    reads as a call. The brackets are made spaces, which keeps every position, and the new
    tree is taken when it holds fewer errors. A Python bracket closed by a stray one lines
    later swallows the definitions between them: the blocks ``ast`` cannot read are made
    spaces too, and that tree is taken when it holds more definitions. Returns the tree and the
    text it was read from.
    """
    tree = parser.parse(data)
    if not tree.root_node.has_error:
        return tree, data
    errors, stray = _errors(tree.root_node)
    if stray:
        blanked = bytearray(data)
        for at in stray:
            blanked[at] = ord(" ")
        again = parser.parse(bytes(blanked))
        if _errors(again.root_node)[0] < errors:
            tree, data = again, bytes(blanked)
    if language != "python" or not tree.root_node.has_error:
        return tree, data
    text = data.decode("utf-8", "surrogatepass")
    if parses(text):
        return tree, data  # tree-sitter's grammar, not the file, is at fault: nothing to blank
    kept = without_broken_blocks(text).encode("utf-8", "surrogatepass")
    again = parser.parse(kept)
    if _python_definitions(again.root_node) > _python_definitions(tree.root_node):
        return again, kept
    return tree, data


def _python_definitions(root: Any) -> int:
    """How many definitions the units are made of: at the top level and in class bodies."""
    count, pending = 0, list(root.named_children)
    while pending:
        node = pending.pop()
        if node.type == "decorated_definition":
            pending.extend(node.named_children)
        elif node.type in _DEFINITIONS["python"]:
            count += 1
            body = node.child_by_field_name("body")
            if node.type == "class_definition" and body is not None:
                pending.extend(body.named_children)
    return count


def _errors(root: Any) -> tuple[int, list[int]]:
    """How many error nodes the tree holds, and where the opening brackets directly in them
    start (their bytes)."""
    count, stray, pending = 0, [], [root]
    while pending:
        node = pending.pop()
        if node.type == "ERROR" or node.is_missing:
            count += 1
        for child in node.children:
            if node.type == "ERROR" and child.type in _OPENING:
                stray.append(int(child.start_byte))
            elif child.has_error or child.is_missing:
                pending.append(child)
    return count, stray


def parse_with_tree_sitter(path: str, language: str, source: str, parser: Any) -> ParsedFile:
    """Parse one file's text with a parser from :func:`parser_for`."""
    return _TreeSitterFile(path, language, source, parser).parse()


class _TreeSitterFile:
    def __init__(self, path: str, language: str, source: str, parser: Any) -> None:
        self.path = path
        self.language = language
        self.source = source
        self.lines = source.split("\n")
        data = source.encode("utf-8")
        self.tree, read = _parse(parser, data, language)
        # Lines read with brackets or blocks made spaces: their calls are found in the file.
        rows = zip(data.split(b"\n"), read.split(b"\n"), strict=True)
        self.blanked = frozenset(row for row, (a, b) in enumerate(rows) if a != b)
        self.definitions = _DEFINITIONS[language]
        self.symbols: list[Symbol] = []
        self.covered: set[int] = set()

    def parse(self) -> ParsedFile:
        root = self.tree.root_node
        # One query finds every call, type use and import; a unit takes the names on its lines.
        captures = _captures(_query(self.language), root)
        self.require_nodes: list[Any] = []
        # tree-sitter returns captures in an order that changes from one parse of the same text
        # to the next: put them in source order, a chained call before the call it is chained
        # to (same start, ends first), so that the references and imports are the same each time.
        self.import_nodes = sorted(captures.get("imp", []), key=_span)
        found = [
            x for node in sorted(captures.get("ref", []), key=_span) for x in self._reference(node)
        ]
        if self.blanked:
            found = self._as_written(found)
        self.ref_rows = [row for row, _ in found]
        self.ref_names = [name for _, name in found]
        self._visit(root.named_children, parent=None)
        self.symbols.extend(
            module_units(
                self.path,
                self.lines,
                self.covered,
                self._module_docstring(root),
                self._references_in,
            )
        )
        self.symbols.sort(key=lambda s: s.start_line)
        imports = tuple(unique(self._imports()))
        return ParsedFile(
            path=self.path, language=self.language, symbols=tuple(self.symbols), imports=imports
        )

    def _visit(self, nodes: Iterable[Any], parent: str | None) -> None:
        previous: Any = None
        for node in nodes:
            self._definition(node, node, parent, previous)
            previous = node

    def _definition(self, outer: Any, node: Any, parent: str | None, previous: Any) -> None:
        kind = self.definitions.get(node.type)
        if node.type in _WRAPPERS:
            for child in node.named_children:
                if child.type in self.definitions or child.type in _WRAPPERS:
                    self._definition(
                        outer if node.type != "type_declaration" else child, child, parent, previous
                    )
            return
        if kind is None:
            if node.type in ("lexical_declaration", "variable_declaration"):
                self._variable_functions(outer, node, parent, previous)
            return
        name_node = node.child_by_field_name("name") or node.child_by_field_name("type")
        name = _text(name_node) if name_node is not None else "<anonymous>"
        if kind == "function" and parent is not None:
            kind = "method"
        start = self._leading_comment_start(outer, previous)
        end = outer.end_point[0]
        body = node.child_by_field_name("body")
        members = self._members(body) if node.type in _CONTAINERS and body is not None else []
        if members:
            first = min(self._leading_comment_start(m, None) for m in members)
            self._emit(name, kind, parent, start, max(start, first - 1), node)
            self._visit(body.named_children, parent=name)
        else:
            self._emit(name, kind, parent, start, end, node)

    def _members(self, body: Any) -> list[Any]:
        found = []
        for child in body.named_children:
            inner = child
            while inner.type in _WRAPPERS and inner.named_children:
                inner = next((c for c in inner.named_children if c.type in self.definitions), inner)
                if inner is child:
                    break
            if inner.type in self.definitions:
                found.append(child)
        return found

    def _variable_functions(self, outer: Any, node: Any, parent: str | None, previous: Any) -> None:
        for declarator in node.named_children:
            value = declarator.child_by_field_name("value")
            name = declarator.child_by_field_name("name")
            if value is None or name is None:
                continue
            if value.type in ("arrow_function", "function_expression", "function", "class"):
                kind = "class" if value.type == "class" else "function"
                start = self._leading_comment_start(outer, previous)
                self._emit(_text(name), kind, parent, start, outer.end_point[0], value)

    def _leading_comment_start(self, node: Any, previous: Any) -> int:
        start = int(node.start_point[0])
        sibling = node.prev_named_sibling if previous is None else previous
        while sibling is not None and sibling.type in _COMMENTS:
            if sibling.end_point[0] < start - 1:
                break
            start = int(sibling.start_point[0])
            sibling = sibling.prev_named_sibling
        return start

    def _emit(
        self, name: str, kind: str, parent: str | None, start: int, end: int, node: Any
    ) -> None:
        lines = [n for n in range(start, end + 1) if n not in self.covered]
        if not lines:
            return
        start, end = lines[0], lines[-1]
        self.covered.update(range(start, end + 1))
        text = "\n".join(self.lines[start : end + 1])
        self.symbols.append(
            Symbol(
                path=self.path,
                name=name,
                kind=kind,
                parent=parent,
                start_line=start + 1,
                end_line=end + 1,
                docstring=self._docstring(node, start),
                text=text,
                references=self._references_in(start, end),
            )
        )

    def _as_written(self, found: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """``found`` with the names on blanked lines taken from the file's text instead, by the
        scan the parsers without a tree use: the tree does not see a call whose bracket it was
        not given."""
        scanned = [(row, name) for row in self.blanked for name in call_names(self.lines[row])]
        kept = [(row, name) for row, name in found if row not in self.blanked]
        return sorted(kept + scanned, key=lambda x: x[0])

    def _references_in(self, start: int, end: int) -> tuple[str, ...]:
        """Names called or used as types on lines ``start`` to ``end`` (0-based, inclusive)."""
        lo = bisect.bisect_left(self.ref_rows, start)
        hi = bisect.bisect_right(self.ref_rows, end)
        return tuple(unique(self.ref_names[lo:hi]))

    def _docstring(self, node: Any, start: int) -> str:
        if self.language == "python":
            body = node.child_by_field_name("body")
            if body is not None and body.named_child_count:
                first = body.named_children[0]
                if first.type == "expression_statement" and first.named_child_count:
                    string = first.named_children[0]
                    if string.type == "string":
                        return _clean_docstring(_text(string))
            return ""
        comment = self.lines[start : node.start_point[0]]
        return _clean_comment("\n".join(comment))

    def _reference(self, node: Any) -> Iterable[tuple[int, str]]:
        """The name a call or type-use node refers to, with its line."""
        row = int(node.start_point[0])
        if node.type in _TYPE_NAMES:
            yield row, _text(node)
            return
        target = (
            node.child_by_field_name("function")
            or node.child_by_field_name("name")
            or node.child_by_field_name("constructor")
            or node.child_by_field_name("type")
            or node.child_by_field_name("macro")
        )
        if target is None:
            return
        name = _last_name(target)
        if name == "require" and node.type == "call_expression":
            self.require_nodes.append(node)
        if name:
            yield row, name

    def _module_docstring(self, root: Any) -> str:
        if self.language != "python" or not root.named_child_count:
            return ""
        first = root.named_children[0]
        if (
            first.type == "expression_statement"
            and first.named_child_count
            and first.named_children[0].type == "string"
        ):
            return _clean_docstring(_text(first.named_children[0]))
        return ""

    def _imports(self) -> Iterable[str]:
        for node in self.import_nodes:
            yield from self._import_names(node)
        if self.language in _JS:
            # require("./x") is a call: among the references' nodes.
            for node in self.require_nodes:
                yield from _strings(node)

    def _import_names(self, node: Any) -> Iterable[str]:
        language = self.language
        if language == "python":
            if node.type == "import_statement":
                for child in node.named_children:
                    target = (
                        child.child_by_field_name("name")
                        if child.type == "aliased_import"
                        else child
                    )
                    if target is not None:
                        yield _text(target)
                return
            module = node.child_by_field_name("module_name")
            base = _text(module) if module is not None else ""
            for child in node.children_by_field_name("name"):
                target = (
                    child.child_by_field_name("name") if child.type == "aliased_import" else child
                )
                if target is None:
                    continue
                # "from . import x" and "from a import b": b may be a module or a name in a.
                sep = "" if base.endswith(".") else "."
                yield f"{base}{sep}{_text(target)}"
            if base:
                yield base
        elif language in ("javascript", "typescript", "tsx"):
            source = node.child_by_field_name("source")
            if source is not None:
                yield from _strings(source)
        elif language == "go":
            target = node.child_by_field_name("path")
            if target is not None:
                yield _text(target).strip('"`')
        elif language == "rust":
            if node.type == "mod_item":
                name = node.child_by_field_name("name")
                if name is not None and node.child_by_field_name("body") is None:
                    yield "self::" + _text(name)
                return
            argument = node.child_by_field_name("argument")
            if argument is not None:
                yield re.sub(r"\s+", "", _text(argument))
        elif language == "java":
            for child in node.named_children:
                if child.type in ("scoped_identifier", "identifier"):
                    yield _text(child)


def _strings(node: Any) -> Iterable[str]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "string_fragment":
            yield _text(current)
            continue
        stack.extend(current.named_children)


def _last_name(node: Any) -> str:
    """The rightmost identifier of a call target: ``a.b.c`` -> ``c``, ``pkg::f`` -> ``f``."""
    names = identifiers(_text(node))
    return names[-1] if names else ""


def _clean_docstring(literal: str) -> str:
    body = re.sub(r'^[rRbBuUfF]*("""|\'\'\'|"|\')', "", literal)
    body = re.sub(r'("""|\'\'\'|"|\')$', "", body)
    return _dedent(body)


def _clean_comment(comment: str) -> str:
    lines = []
    for line in comment.split("\n"):
        line = re.sub(r"^\s*(///?!?|/\*\*?|\*/|\*|#)", "", line)
        line = re.sub(r"\*/\s*$", "", line)
        lines.append(line.strip())
    return "\n".join(line for line in lines if line).strip()


def _dedent(text: str) -> str:
    import inspect

    return inspect.cleandoc(text)
