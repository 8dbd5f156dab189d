"""Test runs (pytest, unittest, Django's runner, jest/vitest, go test, cargo test, maven/gradle,
mocha): the totals, then each failure with its name, its assertion and where it failed."""

from __future__ import annotations

import re

from ._base import Extract, ToolOutput, any_of, assemble
from ._generic import GenericFilter

__all__ = ["TestRunFilter"]

_PROGRAMS = re.compile(
    r"^(pytest|py\.test|unittest|nosetests|tox|runtests\.py|test|jest|vitest|mocha|ava|go|"
    r"cargo|mvn|mvnw|gradle|gradlew|rspec|phpunit|ctest|bin/test)$"
)
# A runner's name in a command, not a file's or a folder's: `cat src/_pytest/unittest.py` and
# `head jest.config.js` show files, which a test run's filter would read as a run.
_COMMAND = re.compile(
    r"(?<![\w.-])(pytest|py\.test|unittest|runtests\.py|manage\.py test|jest|vitest|mocha|"
    r"(npm|yarn|pnpm|bun)( run)? test|go test|cargo test|mvn\b.*\btest|gradlew? .*test|rspec|"
    r"phpunit|ctest|bin/test)(?![\w/-]|\.\w)"
)
# A runner asked to list its tests runs none: its output is the list, which a test run's
# filter would hide whole (pytest --collect-only, go test -list, cargo test -- --list, jest
# --listTests).
_LISTS_TESTS = re.compile(r"(^|\s)(--collect-only|--co|-list|--list|--listTests)(\s|=|$)")
_TOTALS_LINES = (
    r"^=+ .*\b(passed|failed|errors?|skipped|xfailed|xpassed|deselected|no tests ran)\b.*=+$",
    r"^\s*(Tests?|Test Suites|Test Files|Snapshots):\s+\d",
    r"^Ran \d+ tests? in ",
    r"^(OK|FAILED)( \(.*\))?$",
    r"^test result: ",
    r"^\[?(INFO|ERROR|WARNING)?\]?\s*Tests run: \d+, Failures: \d+",
    r"^\s*(Test Files|Tests)  +\d+ (passed|failed|skipped)",  # vitest, without colons
    r"^(ok|FAIL|PASS)\s+\S+\s+(\d[\d.]*m?s|\(cached\)|\[no test files\])",
    r"^(FAIL|ok|PASS)$",
    r"^BUILD (SUCCESS|SUCCESSFUL|FAILURE|FAILED)",
    r"^\s*\d+ (passing|failing|pending)\b",
    r"^collected \d+ items?",
    r"^\d+ tests? completed, \d+ failed",
    r"^\s*\d+ examples?, \d+ failures?",
    r"^System check identified",
    # pytest -q: the same totals as its "=== ... ===" line, undecorated
    r"^(\d+ (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun),? )+"
    r"in \d",
    r"^no tests ran in \d",
)
_TOTALS = any_of(_TOTALS_LINES)
_RUN_TOTALS = any_of(_TOTALS_LINES[:6])
_FAILURE_HEAD_LINES = (
    r"^_{3,} .+ _{3,}$",  # pytest: ____ test_name ____
    r"^(FAIL|ERROR): \S",  # unittest, Django
    r"^\s*● ",  # jest
    r"^\s*(×|✕|✗|❯) ",  # vitest, jest verbose
    r"^\s*--- FAIL: ",  # go
    r"^(FAILED|ERROR) \S+\.\w+::",  # pytest short summary
    r"^\s?FAIL\s+\S+\.(test|spec)\.[jt]sx?",  # jest, vitest (" FAIL  a.test.ts > t")
    r"^---- \S+ stdout ----",  # cargo
    r"^\s*\d+\) ",  # mocha, rspec
    r"^\[ERROR\] \S+.*(FAILURE|ERROR)!?$",  # maven
    r"^\S+ > \S+.* FAILED$",  # gradle
)
_FAILURE_HEAD = any_of(_FAILURE_HEAD_LINES)
# A test's own status line when it failed: pytest -v's "path::name FAILED [ 50%]" (xdist's
# "[gw0] [ 50%] FAILED path::name"), cargo's "test a::b ... FAILED", unittest's and Django's
# "name (module.Class) ... FAIL". A run without its failures' report (pytest -rN, an output cut
# in its middle) names the failing test there only: its totals said "1 failed", not which.
_FAILED_STATUS = re.compile(
    r"^\S.*?(::.+?|\s\.\.\.)\s+(FAILED|FAIL|ERROR)(\s+\[\s*\d+%\])?\s*$|"
    r"^\[gw\d+\]\s+\[\s*\d+%\]\s+(FAILED|ERROR)\s+\S+::"
)
_DETAIL_LINES = (
    r"^E\s",  # pytest's explanation lines
    r"^\s*>\s",  # the failing statement (pytest, jest's code frame)
    r"\b\w*(Error|Exception|Failure)\b",
    r"\bassert",
    r"\bexpect\(",
    r"^\s*(Expected|Received|expected|received|actual|Actual|left|right|got|want)\b",
    r"[\w./-]+\.(py|pyx|ts|tsx|js|jsx|mjs|go|rs|java|kt|rb|php|c|cc|cpp|h|cs|swift):\d+",
    r'File ".+", line \d+',
    r"panicked at",
    r"^\s*panic: ",  # go: the panic a failing test raised
    r"^\s+at .+:\d+(:\d+)?\)?$",
)
_DETAIL = any_of(_DETAIL_LINES)
_LIBRARY = re.compile(
    r"site-packages|dist-packages|node_modules|/usr/lib/|/lib/python\d|<frozen |"
    r"internal/|/rustc/|\(node:|/\.cargo/registry/|jest-circus|unittest/case\.py|"
    r"/usr/local/go/src/|/go/pkg/mod/"
)
_GO_FAIL = re.compile(r"^\s*--- FAIL: ")
# The diff jest, vitest and mocha print for an equality that failed ("- Expected  - 1",
# "-   \"total\": 4,", "+   \"total\": 3,"): the values the test expected and received. Kept
# apart from the other details, so that a long diff leaves room for where the test failed.
_DIFF = re.compile(r"^\s*[-+](?![-+])\s*\S")
_LOOSE_ERROR = re.compile(r"\b\w*(Error|Exception)\b|^error\b|^Traceback ", re.IGNORECASE)
_DETAILS_PER_FAILURE = 14
# The failing tests' status lines kept at most: the names, when the report of each failure (which
# names them too) is missing; a run of hundreds of failures has that report.
_MAX_FAILED_STATUS = 40


class TestRunFilter:
    """Test runner output: the totals, then each failure with its name, assertion and file:line.

    Passing tests, progress dots, captured logs and library frames are dropped (counted); the
    lines kept are verbatim.

    Example:
        >>> from ctxpack.filters import ToolOutput
        >>> log = "\\n".join(
        ...     ["PASS src/a.test.ts"] * 30
        ...     + ["FAIL src/auth.test.ts", "  ● Auth › refreshes expired token", "",
        ...        "    Received: undefined",
        ...        "      at Object.<anonymous> (src/auth.test.ts:88:31)",
        ...        "Tests:       1 failed, 14 passed, 15 total"])
        >>> print(TestRunFilter().extract(ToolOutput(log, command="npx jest")).text)
        [… 30 lines hidden: 1-30]
        FAIL src/auth.test.ts
          ● Auth › refreshes expired token
        <BLANKLINE>
            Received: undefined
              at Object.<anonymous> (src/auth.test.ts:88:31)
        Tests:       1 failed, 14 passed, 15 total
    """

    __test__ = False  # not a pytest test class, despite the name
    kind = "test_run"

    def detect(self, output: ToolOutput, /) -> float:
        if output.command and _LISTS_TESTS.search(output.command):
            return 0.0
        if output.command and (
            (_PROGRAMS.match(output.program) and output.program not in ("go", "cargo", "test"))
            or _COMMAND.search(output.command)
        ):
            return 1.0
        totals = any(_RUN_TOTALS.search(output.lines[i]) for i in output.body[-40:])
        return 0.75 if totals else 0.0

    def extract(self, output: ToolOutput, /) -> Extract | None:
        lines = output.lines
        keep: set[int] = set(output.envelope)
        in_failure = False
        details = diff = 0
        library = 0
        failures = 0
        totals = 0
        loose_errors = 0
        failed_status = 0
        for i in output.body:
            line = lines[i]
            if _TOTALS.search(line):
                keep.add(i)
                totals += 1
                in_failure = False
                continue
            if _FAILURE_HEAD.search(line):
                keep.add(i)
                failures += 1
                if _GO_FAIL.match(line):
                    # go test prints a failure's messages before its "--- FAIL" line.
                    j = i - 1
                    while j >= 0 and i - j <= _DETAILS_PER_FAILURE and lines[j][:1].isspace():
                        keep.add(j)
                        j -= 1
                in_failure, details, diff = True, 0, 0
                continue
            if not line.strip():
                continue
            if failed_status < _MAX_FAILED_STATUS and _FAILED_STATUS.search(line):
                keep.add(i)
                failed_status += 1
                continue
            if not in_failure:
                # A run that crashed before its tests (an import error, a bad option) says why.
                if loose_errors < _DETAILS_PER_FAILURE and _LOOSE_ERROR.search(line):
                    keep.add(i)
                    loose_errors += 1
                continue
            if _LIBRARY.search(line):
                library += 1
                continue
            if _DIFF.match(line):
                if diff < _DETAILS_PER_FAILURE:
                    keep.add(i)
                    diff += 1
                continue
            if details < _DETAILS_PER_FAILURE and _DETAIL.search(line):
                keep.add(i)
                details += 1
                # The code line under a Python frame says what ran there.
                if line.lstrip().startswith('File "') and i + 1 < len(lines):
                    keep.add(i + 1)
        if not totals and not failures:
            # A run cut before its totals: its tail says where it stopped (generic keeps it,
            # and its FAILED lines as any error line).
            return _unread(output)
        if len(keep) >= len(lines) - 1:
            return None
        summary = (
            "totals and failures kept" if failures or failed_status else "totals kept, no failure"
        )
        if library:
            summary += f", {library} library frames hidden"
        return Extract(assemble(output, keep), summary)


_GENERIC = GenericFilter()


def _unread(output: ToolOutput) -> Extract | None:
    """A test command's output with neither totals nor a failure ctxpack can read: a run cut
    before its totals (a tool's output limit, a timeout), or a runner's format it does not
    know. Shortened as any output is (its errors, head and tail kept), not sent whole."""
    extract = _GENERIC.extract(output)
    if extract is None:
        return None
    return Extract(extract.text, f"no totals read, shortened as any output: {extract.summary}")
