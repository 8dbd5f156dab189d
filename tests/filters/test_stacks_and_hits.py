"""Filters on the shapes of output that other runtimes and tools print: a JVM stack's frames,
the context lines of ``grep -C`` (each kept where its hit is), the diff of a failed equality
in jest or mocha, the panic of a go test, an exception's indented message, the totals of
vitest and of ``pytest -q``, ``git diff --stat`` (no diff), ``pytest --collect-only``
(no test run)."""

from __future__ import annotations

from ctxpack.filters import (
    ListingFilter,
    TestRunFilter,
    ToolOutput,
    ToolOutputFilter,
    TracebackFilter,
)


def _run_kept(log: list[str], command: str) -> list[str]:
    """The lines TestRunFilter keeps of a run's ``log``, run as ``command``."""
    extract = TestRunFilter().extract(ToolOutput("\n".join(log), command=command))
    assert extract is not None
    return extract.text.split("\n")


def _java_stack() -> str:
    lines = [
        'Exception in thread "main" java.lang.NullPointerException: token is null',
        "\tat com.acme.auth.Refresher.refresh(Refresher.java:42)",
    ]
    lines += [f"\tat java.base/java.util.stream.Pipe.step{i}(Pipe.java:{i})" for i in range(40)]
    lines += [
        "Caused by: java.io.IOException: disk full",
        "\tat com.acme.io.Store.write(Store.java:7)",
    ]
    lines += [f"\tat java.base/java.io.Out.w{i}(Out.java:{i})" for i in range(30)]
    return "\n".join(lines)


def test_a_java_stack_keeps_the_projects_frames_and_counts_the_jdks() -> None:
    text = _java_stack()
    extract = TracebackFilter().extract(ToolOutput(text))
    assert extract is not None
    kept = extract.text.split("\n")
    assert "\tat com.acme.auth.Refresher.refresh(Refresher.java:42)" in kept
    assert "\tat com.acme.io.Store.write(Store.java:7)" in kept
    assert not any("java.base/" in line for line in kept)
    assert extract.summary == "70 library frames hidden"
    out = ToolOutputFilter()(text)
    assert out.kind == "traceback" and "Refresher.java:42" in out.text


def test_grep_context_lines_stay_with_their_hit() -> None:
    lines = []
    for name in ("src/auth.py", "src/my-1-file.py"):
        for n in range(10, 400, 20):
            lines += [
                f"{name}-{n - 1}-    before = {n}",
                f"{name}:{n}:    token = refresh({n})",
                f"{name}-{n + 1}-    after = {n}",
                "--",
            ]
    output = ToolOutput("\n".join(lines[:-1]), command="grep -rn -C1 token src")
    extract = ListingFilter(per_group=8).extract(output)
    assert extract is not None
    assert extract.text.split("\n")[:9] == [
        "src/auth.py-9-    before = 10",
        "src/auth.py:10:    token = refresh(10)",
        "src/auth.py-11-    after = 10",
        "--",
        "src/auth.py-29-    before = 30",
        "src/auth.py:30:    token = refresh(30)",
        "src/auth.py-31-    after = 30",
        "--",
        "[… 72 more in src/auth.py hidden]",
    ]
    assert "src/my-1-file.py-9-    before = 10" in extract.text.split("\n")
    assert "in this listing" not in extract.text


def test_a_jest_equality_diff_keeps_the_values_expected_and_received() -> None:
    log = [f"PASS src/c{i}.test.js" for i in range(40)] + [
        "FAIL src/sum.test.js",
        "  ● sum › adds objects",
        "",
        "    expect(received).toEqual(expected) // deep equality",
        "",
        "    - Expected  - 1",
        "    + Received  + 1",
        "",
        "      Object {",
        '    -   "total": 4,',
        '    +   "total": 3,',
        "      }",
        "",
        "    > 13 |     expect(sum({a: 1})).toEqual({total: 4});",
        "",
        "      at Object.<anonymous> (src/sum.test.js:13:25)",
        "",
        "Tests:       1 failed, 120 passed, 121 total",
    ]
    kept = _run_kept(log, "npx jest")
    for line in ("    - Expected  - 1", '    -   "total": 4,', '    +   "total": 3,'):
        assert line in kept
    assert "      at Object.<anonymous> (src/sum.test.js:13:25)" in kept


def test_a_long_diff_leaves_room_for_where_the_test_failed() -> None:
    log = [f"ok {i}" for i in range(40)] + ["  1) adds", "      AssertionError: lists differ"]
    log += [f"      -{i}" for i in range(30)] + [f"      +{i + 1}" for i in range(30)]
    log += ["      at Context.<anonymous> (test/sum.js:5:14)", "  0 passing", "  1 failing"]
    extract = TestRunFilter().extract(ToolOutput("\n".join(log), command="npx mocha"))
    assert extract is not None
    assert "      at Context.<anonymous> (test/sum.js:5:14)" in extract.text.split("\n")


def test_a_go_test_panic_keeps_the_panic_and_the_projects_frames() -> None:
    log = [f"--- PASS: TestOK{i} (0.00s)" for i in range(60)] + [
        "--- FAIL: TestX (0.00s)",
        "panic: runtime error: index out of range [5] with length 3 [recovered]",
        "",
        "goroutine 7 [running]:",
    ]
    for n in range(1, 8):
        log += ["testing.tRunner.func1()", f"\t/usr/local/go/src/testing/testing.go:15{n}0 +0x3"]
    log += ["example.com/m.TestX(0xc000007ba0)", "\t/app/m_test.go:12 +0x1d"]
    log += ["FAIL\texample.com/m\t0.005s"]
    extract = TestRunFilter().extract(ToolOutput("\n".join(log), command="go test ./..."))
    assert extract is not None
    kept = extract.text.split("\n")
    assert "panic: runtime error: index out of range [5] with length 3 [recovered]" in kept
    assert "\t/app/m_test.go:12 +0x1d" in kept
    assert not any("/usr/local/go/src/" in line for line in kept)
    assert "7 library frames hidden" in extract.summary


def test_an_exceptions_indented_message_lines_are_kept() -> None:
    tb = ["Traceback (most recent call last):", '  File "/app/main.py", line 10, in <module>']
    tb += ["    run()"]
    for n in range(15):
        tb += [f'  File "/venv/lib/python3.11/site-packages/pydantic/m{n}.py", line {n}, in f']
        tb += ["    f()"]
    message = [
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for Settings",
        "port",
        "  Input should be a valid integer [type=int_parsing, input_value='abc', input_type=str]",
        "    For further information visit https://errors.pydantic.dev/2.5/v/int_parsing",
    ]
    tail = ["", *(f"cleanup {i}" for i in range(20))]
    extract = TracebackFilter().extract(ToolOutput("\n".join(tb + message + tail)))
    assert extract is not None
    kept = extract.text.split("\n")
    assert all(line in kept for line in message)
    assert not any("site-packages" in line for line in kept)


def test_a_vitest_run_keeps_its_totals_and_the_failing_tests_name() -> None:
    log = [" RUN  v1.2.0 /app", ""] + [f" ✓ src/c{i}.test.ts  (3 tests) 2ms" for i in range(60)]
    log += [
        " ❯ src/sum.test.ts  (2 tests | 1 failed) 5ms",
        "   × sum > adds 3ms",
        "",
        " FAIL  src/sum.test.ts > sum > adds",
        "AssertionError: expected 3 to be 4 // Object.is equality",
        " ❯ src/sum.test.ts:5:17",
        "",
        " Test Files  1 failed | 60 passed (61)",
        "      Tests  1 failed | 181 passed (182)",
        "   Duration  1.20s",
    ]
    kept = _run_kept(log, "npx vitest run")
    assert " FAIL  src/sum.test.ts > sum > adds" in kept
    assert " Test Files  1 failed | 60 passed (61)" in kept
    assert "      Tests  1 failed | 181 passed (182)" in kept


def test_a_quiet_pytest_run_keeps_its_totals() -> None:
    log = ["." * 70 + " [ 50%]"] * 20 + [
        "=================================== FAILURES ===================================",
        "___________________________________ test_x ____________________________________",
        ">       assert 1 == 2",
        "E       assert 1 == 2",
        "tests/test_a.py:3: AssertionError",
        "=========================== short test summary info ============================",
        "FAILED tests/test_a.py::test_x - assert 1 == 2",
        "1 failed, 1469 passed, 3 warnings in 3.05s",
    ]
    extract = TestRunFilter().extract(ToolOutput("\n".join(log), command="pytest -q"))
    assert extract is not None
    assert extract.text.split("\n")[-1] == "1 failed, 1469 passed, 3 warnings in 3.05s"


def test_git_diff_stat_and_name_only_are_not_hidden_as_diffs() -> None:
    stat = [f" src/module_{i}/file_{i}.py | {i % 17 + 1} +++--" for i in range(150)]
    stat.append(" 150 files changed, 900 insertions(+), 300 deletions(-)")
    out = ToolOutputFilter()("\n".join(stat), command="git diff --stat")
    assert out.kind != "diff"
    assert " 150 files changed, 900 insertions(+), 300 deletions(-)" in out.text.split("\n")
    names = "\n".join(f"src/module_{i}/file_{i}.py" for i in range(150))
    out = ToolOutputFilter()(names, command="git diff --name-only HEAD~3")
    assert out.kind != "diff"
    assert "src/module_0/file_0.py" in out.text.split("\n")


def test_a_runner_listing_its_tests_is_not_filtered_as_a_test_run() -> None:
    out = ["collected 300 items", ""]
    for m in range(10):
        out += [f"<Module tests/test_m{m}.py>"] + [f"  <Function test_{m}_{i}>" for i in range(30)]
    out += ["", "========================= 300 tests collected in 0.31s ========================="]
    filtered = ToolOutputFilter()("\n".join(out), command="pytest --collect-only")
    assert filtered.kind != "test_run"
    assert "<Module tests/test_m0.py>" in filtered.text.split("\n")
    assert out[-1] in filtered.text.split("\n")
