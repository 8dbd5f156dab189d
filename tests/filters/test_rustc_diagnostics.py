"""rustc's diagnostics: a message and its ``-->`` location are one diagnostic, and a message
rustc gives no location is kept, never dropped."""

from __future__ import annotations

from ctxpack.filters import DiagnosticFilter, ToolOutput


def _build_log() -> list[str]:
    lines = [
        "   Compiling foo v0.1.0 (/app)",
        "error[E0463]: can't find crate for `std`",
        "  |",
        "  = note: the `x86_64-unknown-linux-musl` target may not be installed",
        "",
    ]
    for i in range(30):
        lines += [
            f"error[E0425]: cannot find value `x{i}` in this scope",
            f" --> src/main.rs:{i + 2}:5",
            "  |",
            f"{i + 2} |     x{i}",
            "  |     ^^ not found in this scope",
            "",
        ]
    return [
        *lines,
        "error: failed to run custom build command for `openssl-sys v0.9.80`",
        "warning: build failed, waiting for other jobs to finish...",
        "cc/ssl.c:3:10: fatal error: openssl/ssl.h: No such file or directory",
        'error: could not compile `foo` (bin "foo") due to 32 previous errors',
    ]


def test_a_message_without_a_location_is_kept() -> None:
    extract = DiagnosticFilter().extract(ToolOutput("\n".join(_build_log()), command="cargo build"))
    assert extract is not None
    kept = extract.text.split("\n")
    assert "error[E0463]: can't find crate for `std`" in kept
    assert "error: failed to run custom build command for `openssl-sys v0.9.80`" in kept
    assert "warning: build failed, waiting for other jobs to finish..." in kept
    assert "cc/ssl.c:3:10: fatal error: openssl/ssl.h: No such file or directory" in kept


def test_a_message_and_its_location_count_as_one_diagnostic() -> None:
    extract = DiagnosticFilter().extract(ToolOutput("\n".join(_build_log()), command="cargo build"))
    assert extract is not None
    kept = extract.text.split("\n")
    # 25 per file shown, each with its location; the 5 others counted as diagnostics.
    assert "error[E0425]: cannot find value `x24` in this scope" in kept
    assert kept[kept.index("error[E0425]: cannot find value `x24` in this scope") + 1] == (
        " --> src/main.rs:26:5"
    )
    assert "[… 5 more diagnostics in src/main.rs hidden]" in kept
    assert extract.summary.startswith("34 distinct diagnostics in 2 files")
