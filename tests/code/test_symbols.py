from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from ctxpack import ConfigError
from ctxpack.code import (
    CodeIndex,
    ParsedFile,
    ParserFallbackWarning,
    parse_source,
    tree_sitter_available,
)
from ctxpack.code.fallback import parse_python_ast
from tests.helpers import cpu_seconds

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "coderepo"

needs_tree_sitter = pytest.mark.skipif(
    not tree_sitter_available("rust"), reason="tree-sitter grammars are not installed"
)


def units(path: str, language: str) -> list[tuple[str, str, str | None]]:
    parsed = parse_source(path, language, (FIXTURE / path).read_text())
    return [(s.name, s.kind, s.parent) for s in parsed.symbols if s.kind != "module"]


@needs_tree_sitter
@pytest.mark.parametrize(
    ("path", "language", "expected"),
    [
        (
            "api/throttle.py",
            "python",
            [
                ("TokenBucket", "class", None),
                ("__init__", "method", "TokenBucket"),
                ("take", "method", "TokenBucket"),
                ("middleware", "function", None),
            ],
        ),
        (
            "web/src/session.ts",
            "typescript",
            [
                ("refreshSession", "function", None),
                ("SessionStore", "class", None),
                ("save", "method", "SessionStore"),
            ],
        ),
        (
            "web/src/jwt.ts",
            "typescript",
            [("JwtClaims", "interface", None), ("decodeJwt", "function", None)],
        ),
        (
            "web/legacy/cart.js",
            "javascript",
            [
                ("Cart", "class", None),
                ("constructor", "method", "Cart"),
                ("add", "method", "Cart"),
                ("cartTotal", "function", None),
            ],
        ),
        (
            "services/ledger/ledger.go",
            "go",
            [("Entry", "type", None), ("Ledger", "type", None), ("Append", "method", None)],
        ),
        (
            "engine/src/scheduler.rs",
            "rust",
            [
                ("Scheduler", "type", None),
                ("Scheduler", "impl", None),
                ("new", "method", "Scheduler"),
                ("next_job", "method", "Scheduler"),
            ],
        ),
        (
            "jvm/src/main/java/com/acme/report/ReportBuilder.java",
            "java",
            [
                ("ReportBuilder", "class", None),
                ("addInvoice", "method", "ReportBuilder"),
                ("build", "method", "ReportBuilder"),
            ],
        ),
    ],
)
def test_symbol_units_per_language(
    path: str, language: str, expected: list[tuple[str, str, str | None]]
) -> None:
    assert units(path, language) == expected


@needs_tree_sitter
def test_units_carry_docstrings_lines_and_references() -> None:
    source = (FIXTURE / "api/throttle.py").read_text()
    parsed = parse_source("api/throttle.py", "python", source)
    take = next(s for s in parsed.symbols if s.name == "take")
    assert take.docstring == "Take a token if one is left; refill first for the time elapsed."
    lines = source.split("\n")
    assert take.text == "\n".join(lines[take.start_line - 1 : take.end_line])
    assert take.text.lstrip().startswith("def take(self):")
    middleware = next(s for s in parsed.symbols if s.name == "middleware")
    assert "TokenBucket" in middleware.references
    assert parsed.imports == ("time",)
    # The comment above a Rust item is its docstring and part of its unit.
    rust = parse_source("s.rs", "rust", (FIXTURE / "engine/src/scheduler.rs").read_text())
    assert rust.symbols[0].docstring == "Picks the next job by priority."
    assert rust.symbols[0].start_line == 1


@needs_tree_sitter
def test_no_line_is_in_two_units() -> None:
    for path in ("api/routes.py", "web/legacy/cart.js", "engine/src/scheduler.rs"):
        language = {"py": "python", "js": "javascript", "rs": "rust"}[path.rsplit(".", 1)[1]]
        parsed = parse_source(path, language, (FIXTURE / path).read_text())
        seen: set[int] = set()
        for s in parsed.symbols:
            span = set(range(s.start_line, s.end_line + 1))
            assert not span & seen, (path, s.name)
            seen |= span


@needs_tree_sitter
@pytest.mark.parametrize(
    ("language", "run", "definition"),
    [
        ("python", "((((((((((", "def handler(x):\n    return x + 1"),
        ("python", "x = [[[[", "def handler(x):\n    return x + 1"),
        ("javascript", "((((((((((", "function handler(x) {\n  return x + 1;\n}"),
        ("typescript", "[[[[", "function handler(x: number) {\n  return x + 1;\n}"),
        ("go", "((((", "func handler(x int) int {\n\treturn x + 1\n}"),
        ("rust", "[[[[[[[[", "fn handler(x: i32) -> i32 {\n    x + 1\n}"),
    ],
)
def test_a_definition_after_a_run_of_unclosed_brackets_is_a_unit(
    language: str, run: str, definition: str
) -> None:
    # tree-sitter's recovery made one error node of the run and all that followed it: the
    # definition was read as a call and its lines went into a module unit.
    head = "package m\n" if language == "go" else ""
    parsed = parse_source("m", language, f"{head}{run}\n\n{definition}\n")
    (unit,) = [s for s in parsed.symbols if s.kind != "module"]
    assert (unit.name, unit.kind, unit.text) == ("handler", "function", definition)


@needs_tree_sitter
@pytest.mark.parametrize(
    ("language", "head", "opener"),
    [
        ("python", "def f():\n    return g(1)\n", "["),
        ("javascript", "function f() {\n  return g(1)\n}\n", "{"),
    ],
)
def test_a_long_run_of_unclosed_brackets_parses_in_time_linear_in_its_length(
    language: str, head: str, opener: str
) -> None:
    # Error recovery nests such a run in a chain of hidden nodes that tree-sitter's query
    # cursor walked again at each bracket: 80,000 took 10 s, four times as many 16 times as long.
    # Eight times as many brackets cost eight to ten times as much now, and 64 times if it came
    # back: the bound is far from each.
    def source(n: int) -> str:
        return head + opener * n + "\nh(2)\n"

    parsed = parse_source("m", language, source(40_000))
    assert parsed.symbols[0].name == "f" and parsed.symbols[0].references == ("g",)
    assert "h(2)" in parsed.symbols[-1].text
    small = cpu_seconds(lambda: parse_source("m", language, source(10_000)))
    large = cpu_seconds(lambda: parse_source("m", language, source(80_000)))
    assert large < 20 * small, (small, large)


def test_python_without_tree_sitter_uses_ast() -> None:
    source = (FIXTURE / "api/routes.py").read_text()
    parsed = parse_python_ast("api/routes.py", source)
    named = [(s.name, s.kind, s.parent) for s in parsed.symbols if s.kind != "module"]
    assert named == [
        ("App", "class", None),
        ("__init__", "method", "App"),
        ("route", "method", "App"),
        ("wrap", "method", "App"),
        ("create_app", "function", None),
        ("get_user", "function", None),
    ]
    assert "api.middleware" in parsed.imports
    if tree_sitter_available("python"):
        tree = parse_source("api/routes.py", "python", source)
        assert [(s.name, s.start_line, s.end_line) for s in tree.symbols] == [
            (s.name, s.start_line, s.end_line) for s in parsed.symbols
        ]


def test_missing_grammar_degrades_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxpack.code import _symbols as symbols

    monkeypatch.setattr(symbols, "parser_for", lambda language: None)
    symbols._warn_fallback.cache_clear()
    with pytest.warns(ParserFallbackWarning, match=r'pip install "ctxpack\[code\]"'):
        parsed = parse_source("a.go", "go", "package a\n\nfunc F() { g() }\n")
    assert [(s.kind, s.start_line, s.end_line) for s in parsed.symbols] == [("module", 1, 3)]
    assert parsed.symbols[0].references == ("F", "g")
    symbols._warn_fallback.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParserFallbackWarning)
        assert parse_source("a.py", "python", "def f(:\n").symbols[0].kind == "module"
    symbols._warn_fallback.cache_clear()


@needs_tree_sitter
def test_import_chain_and_call_graph(repo: Path) -> None:
    index = CodeIndex(repo, db=":memory:")
    graph = index.graph
    assert graph.imports["api/routes.py"] == {"api/middleware.py", "api/users.py"}
    assert graph.imports["api/users.py"] == {"api/storage.py"}
    assert graph.imports["api/storage.py"] == {"api/db.py"}
    assert graph.imports["web/src/session.ts"] == {"web/src/jwt.ts"}
    assert graph.imports["web/legacy/cart.js"] == {"web/legacy/pricing.js"}
    assert graph.imports["services/ledger/ledger.go"] == {"services/audit/audit.go"}
    assert graph.imports["engine/src/lib.rs"] == {"engine/src/scheduler.rs"}
    java = "jvm/src/main/java/com/acme/report/ReportBuilder.java"
    assert graph.imports[java] == {"jvm/src/main/java/com/acme/util/Formatter.java"}
    # Who calls connect (the blast radius of changing it), and where it is defined. Calls are
    # matched by name: db.connect's own call to sqlite3.connect counts too.
    assert [(s.path, s.name) for s in index.callers("connect")] == [
        ("api/db.py", "connect"),
        ("api/storage.py", "fetch_record"),
    ]
    assert [(s.path, s.start_line) for s in index.definitions("connect")] == [("api/db.py", 8)]
    # The chain is walkable: routes -> users -> storage -> db.
    assert "api/db.py" in graph.neighbours("api/storage.py")
    assert "api/storage.py" in graph.neighbours("api/db.py")


_DEFINITIONS = (
    "\ndef alpha():\n    return beta()\n\nclass Gamma:\n    def delta(self):\n        return 1\n"
    "\n@register\nasync def beta():\n    return 2\n"
)
_STRAY_BRACKETS = {
    "unclosed": "import os\nx = foo(1,\n" + _DEFINITIONS,
    "one too many": "import os\nx = foo(1))\n" + _DEFINITIONS,
    "closed much later": "import os\nx = foo(1,\n" + _DEFINITIONS + "y = 2)\n",
    "before a string": 'x = foo(1,\nS = """\ndef fake():\n"""\n' + _DEFINITIONS,
    # Broken lines of non-ASCII text, or with carriage returns, are blanked as well.
    "after non-ASCII text": 'x = foo("café ✓ 日本",\n' + _DEFINITIONS + 'y = "naïve")\n',
    "with CRLF line ends": ("import os\nx = foo(1,\n" + _DEFINITIONS + "y = 2)\n").replace(
        "\n", "\r\n"
    ),
}


def _definitions(source: str) -> list[tuple[str, str, int]]:
    parsed = parse_source("m.py", "python", source)
    return [(s.name, s.kind, s.start_line) for s in parsed.symbols if s.kind != "module"]


@pytest.mark.parametrize("source", _STRAY_BRACKETS.values(), ids=list(_STRAY_BRACKETS))
def test_a_stray_bracket_costs_the_fallback_its_block_not_the_file(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ast refused the whole file, which became one module unit: ranking and context lost
    # every definition in it.
    from ctxpack.code import _symbols as symbols

    monkeypatch.setattr(symbols, "parser_for", lambda language: None)
    first = source.splitlines().index("def alpha():") + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParserFallbackWarning)
        found = _definitions(source)
    assert found == [
        ("alpha", "function", first),
        ("Gamma", "class", first + 3),
        ("delta", "method", first + 4),
        ("beta", "function", first + 7),
    ]
    assert "fake" not in {name for name, _, _ in found}


@pytest.mark.skipif(not tree_sitter_available("python"), reason="tree-sitter is not installed")
@pytest.mark.parametrize("kind", list(_STRAY_BRACKETS))
def test_a_stray_bracket_costs_tree_sitter_no_definition(kind: str) -> None:
    # A bracket closed many lines later, or a string after an unclosed one, made one error
    # node of the file: tree-sitter's reading of it held no definition.
    source = _STRAY_BRACKETS[kind]
    first = source.splitlines().index("def alpha():") + 1
    assert _definitions(source) == [
        ("alpha", "function", first),
        ("Gamma", "class", first + 3),
        ("delta", "method", first + 4),
        ("beta", "function", first + 7),
    ]


# A bracket opened at the top and closed by a stray one inside the last definition.
_CLOSED_IN_A_DEFINITION = (
    "import os\nx = foo(1,\n\ndef alpha():\n    return beta()\n\nclass Gamma:\n"
    "    def delta(self):\n        return 1\n\ndef beta():\n    return 2)\n"
)


def _parse_python(parser: str, source: str, monkeypatch: pytest.MonkeyPatch) -> ParsedFile:
    """``source`` parsed as a Python file by ``parser``: ``"ast"`` or ``"tree-sitter"``."""
    from ctxpack.code import _symbols as symbols

    if parser == "ast":
        monkeypatch.setattr(symbols, "parser_for", lambda language: None)
    elif not tree_sitter_available("python"):
        pytest.skip("tree-sitter is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParserFallbackWarning)
        return parse_source("m.py", "python", source)


@pytest.mark.parametrize("parser", ["ast", "tree-sitter"])
def test_a_bracket_closed_in_a_later_definition_costs_only_that_definition(
    parser: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed = _parse_python(parser, _CLOSED_IN_A_DEFINITION, monkeypatch)
    found = [(s.name, s.kind, s.start_line, s.end_line) for s in parsed.symbols]
    assert found[:4] == [
        ("<module>", "module", 1, 2),
        ("alpha", "function", 4, 5),
        ("Gamma", "class", 7, 7),
        ("delta", "method", 8, 9),
    ]
    # The broken lines are module text, read from the file as it is.
    assert parsed.symbols[0].text == "import os\nx = foo(1,"
    assert "    return 2)" in parsed.symbols[-1].text


def test_an_expression_nested_too_deep_for_ast_costs_the_fallback_its_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ast.parse raised MemoryError ("too complex"), not SyntaxError, and the refresh failed.
    from ctxpack.code import _symbols as symbols

    monkeypatch.setattr(symbols, "parser_for", lambda language: None)
    source = "x = " + "-" * 100_000 + "1\n\ndef f():\n    return g()\n"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParserFallbackWarning)
        parsed = parse_source("m.py", "python", source)
    assert [(s.name, s.kind, s.start_line) for s in parsed.symbols] == [
        ("<module>", "module", 1),
        ("f", "function", 3),
    ]


# Unclosed brackets before a definition, then calls on the lines read without them.
_BLANKED_CALLS = {
    "unclosed": "x = foo(\n    baz(1),\n\ndef bar():\n    return qux()\n",
    "closed much later": "x = foo(\n    baz(1),\n\ndef bar():\n    return qux()\n\nzap(2))\n",
}


@pytest.mark.parametrize("parser", ["ast", "tree-sitter"])
@pytest.mark.parametrize("kind", list(_BLANKED_CALLS))
def test_calls_on_lines_read_without_their_brackets_are_still_references(
    kind: str, parser: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tree-sitter read such a file again with the brackets, or the blocks ast cannot read,
    # made spaces: the calls on those lines were missing from their module unit's references,
    # so the call graph and the ranking did not see them.
    parsed = _parse_python(parser, _BLANKED_CALLS[kind], monkeypatch)
    found = [(s.name, s.start_line, s.references) for s in parsed.symbols]
    assert found[:2] == [("<module>", 1, ("foo", "baz")), ("bar", 4, ("qux",))]
    if kind == "closed much later":
        assert found[2:] == [("<module>", 7, ("zap",))]


@pytest.mark.parametrize("language", ["ruby", "Python", "", "text"])
def test_a_language_it_does_not_parse_is_named(language: str) -> None:
    # Any other name was parsed as one unit, with a warning to install the grammars "for
    # symbol units in every language", which would not give it any.
    with pytest.raises(ConfigError, match=r"language must be one of .*python"):
        parse_source("a.rb", language, "def f\nend\n")
