"""The line a later answer needs stays in what is sent, not only in the stored original: an
error in the middle of a long log, an exception a build or a container printed."""

from __future__ import annotations

from ctxpack.filters import GenericFilter, ToolOutput, ToolOutputFilter


def service_log(lines: int = 3_000, stamp: str = "2026-12-07 12:00") -> list[str]:
    """An application's log: a request per line, a slow-query warning every tenth."""
    log = []
    for i in range(lines):
        if i % 10 == 0:
            log.append(f"{stamp}:{i % 60:02d} WARNING slow query took {i} ms on shard {i % 13}")
        else:
            log.append(f"{stamp}:{i % 60:02d} INFO request {i} served in {i % 97} ms")
    return log


def test_an_error_among_many_warnings_is_kept() -> None:
    log = service_log()
    error = "2026-12-07 12:00:03 ERROR payment-service: connection refused to db-primary:5432"
    log[1_503] = error
    out = ToolOutputFilter()("\n".join(log), command="./run.sh", goal="why do payments fail")
    assert out.kind == "generic" and out.shortened
    assert error in out.text.split("\n")
    # The warnings still have the room the error leaves.
    assert sum("WARNING slow query" in line for line in out.text.split("\n")) >= 40


def test_a_log_whose_lines_open_with_a_time_is_not_read_as_a_file_view() -> None:
    # "12:00:03 ..." opens with a number and a colon, as "12:\tcode" of a numbered file view
    # does; read as one, only its head, its tail and the goal's windows were kept.
    log = service_log(stamp="12:00")
    error = "12:00:03 ERROR payment-service: connection refused to db-primary:5432"
    log[1_503] = error
    out = ToolOutputFilter()("\n".join(log), tool="logs", goal="why do payments fail")
    assert out.kind != "file_view" and out.shortened
    assert error in out.text.split("\n")


def test_numbered_hits_that_do_not_count_lines_are_not_a_file_view() -> None:
    # grep -n of one file, its command unknown: numbers that skip are hits, not a view.
    hits = [f"{7 * i + 3}:    check_item(item_{i}, strict=True)" for i in range(400)]
    hits[200] = "1403:    raise ChecksumError(item_200)  # the failing check"
    out = ToolOutputFilter()("\n".join(hits), goal="why does the checksum check fail")
    assert out.kind != "file_view"
    assert hits[200] in out.text.split("\n")


def test_a_numbered_file_view_is_still_one() -> None:
    view = [f"{n:6}\tvalue_{n} = compute({n})" for n in range(1, 600)]
    out = ToolOutputFilter()("\n".join(view), tool="mcp__fs__show", goal="fix value_300")
    assert out.kind == "file_view"
    assert "   300\tvalue_300 = compute(300)" in out.text.split("\n")


ACCESS = [
    f'172.18.0.1 - - [07/Dec/2026:10:{i % 60:02d}:00 +0000] "GET /api/items/{i} HTTP/1.1" 200 512'
    for i in range(200)
]
TRACEBACK = [
    "Internal Server Error: /api/orders/17",
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.11/site-packages/django/core/handlers/exception.py", '
    "line 55, in inner",
    "    response = get_response(request)",
    '  File "/app/orders/views.py", line 42, in order_detail',
    "    total = compute_total(order.items)",
    '  File "/app/orders/pricing.py", line 17, in compute_total',
    "    return sum(i.price * i.qty for i in items) / len(items)",
    "ZeroDivisionError: division by zero",
]


def test_an_exception_in_a_container_log_is_kept() -> None:
    log = "\n".join(ACCESS[:100] + TRACEBACK + ACCESS[100:])
    for command in ("docker logs web", "docker compose logs web", "make run"):
        out = ToolOutputFilter()(log, command=command, goal="Why does /api/orders/17 fail?")
        assert out.kind == "build_log" and out.shortened, command
        kept = out.text.split("\n")
        assert "ZeroDivisionError: division by zero" in kept, command
        # The project's frames say where it failed.
        assert '  File "/app/orders/pricing.py", line 17, in compute_total' in kept
        assert "    return sum(i.price * i.qty for i in items) / len(items)" in kept


def test_the_cause_of_a_failed_install_is_kept() -> None:
    log = [f"Collecting pkg{i}\n  Downloading pkg{i}-1.0.tar.gz (12 kB)" for i in range(60)]
    log += [
        "  Getting requirements to build wheel: finished with status 'error'",
        "  error: subprocess-exited-with-error",
        "  ",
        "  × Getting requirements to build wheel did not run successfully.",
        "  │ exit code: 1",
        "  ╰─> [20 lines of output]",
        "      Traceback (most recent call last):",
        '        File "/tmp/pip-build-env/lib/python3.11/site-packages/pyproject_hooks/'
        '_in_process.py", line 353, in <module>',
        "          main()",
        '        File "<string>", line 8, in <module>',
        "          import numpy",
        "      ModuleNotFoundError: No module named 'numpy'",
        "      [end of output]",
        "  ",
        "  note: This error originates from a subprocess, and is likely not a problem with pip.",
        "error: subprocess-exited-with-error",
    ]
    out = ToolOutputFilter()("\n".join(log), command="pip install -e .", goal="install it")
    assert out.kind == "build_log" and out.shortened
    assert "      ModuleNotFoundError: No module named 'numpy'" in out.text.split("\n")


def test_a_crash_in_a_build_log_is_kept() -> None:
    compile_lines = [f"gcc -Wall -Werror -O2 -c src/mod{i}.c -o build/mod{i}.o" for i in range(150)]
    crashes = ["/bin/sh: line 1: 4242 Segmentation fault (core dumped) ./build/gen_tables"]
    log = compile_lines[:75] + crashes + compile_lines[75:]
    out = ToolOutputFilter()("\n".join(log), command="make -j2", goal="why does the build stop")
    assert out.shortened and crashes[0] in out.text.split("\n")
    # -Werror is a flag, not an error: the compile lines stay hidden.
    assert sum(line.startswith("gcc ") for line in out.text.split("\n")) <= 10


def test_a_failing_tests_status_line_is_kept_when_it_alone_names_it() -> None:
    # pytest -v -rN prints no summary of failures: the run's totals say "1 failed", and the
    # status line in the middle of 2,000 says which.
    run = ["=" * 29 + " test session starts " + "=" * 30, "collected 2000 items", ""]
    run += [
        f"tests/test_api.py::test_case_{i} PASSED{' ' * 20}[{i // 20:3d}%]" for i in range(2000)
    ]
    run[1_000] = "tests/test_api.py::test_refund_rounding FAILED                     [ 50%]"
    run += ["", "=" * 24 + " 1 failed, 1999 passed in 9.81s " + "=" * 24]
    out = ToolOutputFilter()("\n".join(run), command="pytest -v -rN", goal="fix the failing test")
    assert out.kind == "test_run" and out.shortened
    kept = out.text.split("\n")
    assert run[1_000] in kept and run[-1] in kept
    assert "no failure" not in out.summary
    # cargo's and unittest's status lines likewise.
    cargo = ["running 300 tests"] + [f"test api::case_{i} ... ok" for i in range(300)]
    cargo[150] = "test api::refund_rounding ... FAILED"
    cargo += ["", "test result: FAILED. 299 passed; 1 failed; 0 ignored; finished in 0.4s"]
    out = ToolOutputFilter()("\n".join(cargo), command="cargo test", goal="fix it")
    assert cargo[150] in out.text.split("\n")


def test_a_note_of_the_generic_filter_never_stands_for_less_than_itself() -> None:
    # Runs of copies are folded; between the lines kept, each hidden "x" (the same as one kept)
    # was replaced by "[… 1 lines hidden: 46-46]", longer than what it hid.
    lines = ["starting"] * 40 + [f"worker {i} ready" for i in range(60)]
    for i in range(41, 100, 2):
        lines[i] = "x"
    out = GenericFilter(head=5, tail=5, max_lines=40).extract(ToolOutput("\n".join(lines)))
    assert out is not None
    kept = out.text.split("\n")
    assert not any("1 lines" in line for line in kept)
    for line in kept:
        if line.startswith("[… ") and " hidden: " in line:
            first, _, last = line.rstrip("]").rpartition(" ")[2].partition("-")
            hidden = lines[int(first) - 1 : int(last or first)]
            assert sum(map(len, hidden)) + len(hidden) > len(line) + 1, line
