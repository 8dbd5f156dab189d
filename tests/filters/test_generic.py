"""The generic filter on listings of records (the odd record is kept, repeated lines are not),
and the build-log filter on installs of hundreds of warnings."""

from __future__ import annotations

import random

import pytest

from ctxpack import ConfigError
from ctxpack.filters import (
    BuildLogFilter,
    GenericFilter,
    ToolOutput,
    ToolOutputFilter,
    default_filters,
)


def pods(count: int = 90, bad: int = 61) -> str:
    """``kubectl get pods -o yaml``: ``count`` pods of one deployment, pod ``bad`` crashing."""
    draw = random.Random(3)
    items = []
    for i in range(count):
        state = (
            "        waiting:\n          reason: CrashLoopBackOff\n"
            if i == bad
            else f'        running:\n          startedAt: "2026-12-01T10:{i % 60:02d}:00Z"\n'
        )
        items.append(
            f"- kind: Pod\n  metadata:\n    name: api-{draw.randrange(16**8):08x}-{i:03d}\n"
            f"    uid: {draw.randrange(16**32):032x}\n    labels:\n      app: api\n"
            f"  spec:\n    containers:\n    - image: registry.acme.io/api:1.42.0\n"
            f"      name: api\n  status:\n    containerStatuses:\n"
            f"    - containerID: containerd://{draw.randrange(16**40):040x}\n"
            f"      ready: {'false' if i == bad else 'true'}\n"
            f"      restartCount: {57 if i == bad else 0}\n      state:\n{state}"
            f"    phase: Running\n    podIP: 10.0.{i // 250}.{i % 250}\n"
        )
    return "apiVersion: v1\nitems:\n" + "".join(items) + "kind: List\n"


def test_the_odd_record_of_a_listing_is_kept() -> None:
    raw = pods()
    out = GenericFilter().extract(ToolOutput(raw, goal="Which api pod is failing, and why?"))
    assert out is not None
    kept = out.text.splitlines()
    assert "          reason: CrashLoopBackOff" in kept
    assert "      ready: false" in kept and "        waiting:" in kept
    assert len([line for line in kept if not line.startswith("[…")]) <= 80


def test_a_line_the_same_as_one_kept_is_not_kept_again() -> None:
    out = GenericFilter().extract(ToolOutput(pods(), goal="Which api pod is failing?"))
    assert out is not None
    kept = [line for line in out.text.splitlines() if not line.startswith("[…")]
    # "name: api" and "app: api" share the goal's word in every pod: each is shown in the
    # first and the last lines, which are kept whatever they hold, and not in between.
    assert kept.count("      name: api") <= 2 and kept.count("      app: api") <= 2


def test_the_odd_line_of_a_log_is_kept_without_a_word_that_flags_it() -> None:
    lines = [
        f"2026-12-04T19:{i % 60:02d}:00Z INFO worker-{i % 8} handled request {i:08x} in {i % 97} ms"
        for i in range(3000)
    ]
    lines[1717] = "2026-12-04T19:37:00Z INFO worker-3 switched upstream to 10.0.9.14 (standby)"
    out = ToolOutputFilter()("\n".join(lines), goal="Why did latency jump?")
    assert out.shortened
    assert lines[1717] in out.text.splitlines()


def test_an_output_of_distinct_lines_is_filtered_as_before() -> None:
    # No template repeats: no line is odd, and the passes keep what they kept before.
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
        "lambda",
        "mu",
    ]
    draw = random.Random(5)
    raw = "\n".join(
        " ".join(draw.choice(words) for _ in range(6)) + (" failed" if i == 150 else "")
        for i in range(300)
    )
    out = GenericFilter().extract(ToolOutput(raw))
    assert out is not None
    kept = [line for line in out.text.splitlines() if not line.startswith("[…")]
    assert raw.splitlines()[150] in kept
    # The head and the tail, the error, and nothing else (no word of a goal, no numbers).
    assert len(kept) == 15 + 15 + 1


def test_an_install_of_hundreds_of_distinct_warnings_keeps_a_budget_of_them() -> None:
    warnings = [
        f"npm WARN deprecated pkg-{i}@1.{i % 20}.0: no longer supported, use pkg-{i}-next"
        for i in range(400)
    ]
    warnings[250] = "npm WARN deprecated request@2.88.2: request has been deprecated"
    log = [*warnings, "", "added 1423 packages in 41s", "38 vulnerabilities (2 critical)"]
    out = ToolOutputFilter()("\n".join(log), command="npm install", goal="Why does request fail?")
    assert out.kind == "build_log"
    kept = out.text.splitlines()
    # The warning naming the goal's word, the first ones up to the budget, the outcome.
    assert warnings[250] in kept and warnings[0] in kept and warnings[300] not in kept
    assert sum(line.startswith("npm WARN") for line in kept) == 40
    assert "added 1423 packages in 41s" in kept
    assert "(360 of them hidden)" in out.text
    every = ToolOutputFilter([BuildLogFilter(max_warnings=10**9), *default_filters()])
    assert all(w in every("\n".join(log), command="npm install").text for w in warnings)


def test_the_warning_budget_is_checked() -> None:
    with pytest.raises(ConfigError, match="max_warnings"):
        BuildLogFilter(max_warnings=-1)


def test_a_failure_state_is_a_signal_in_a_table() -> None:
    # `kubectl get pods`: each pod's name is random, so no template repeats; the crashing
    # pod's status is what flags its row.
    draw = random.Random(2)
    rows = ["NAME                        READY   STATUS             RESTARTS      AGE"]
    for i in range(300):
        name = "api-7c9f8d-" + "".join(draw.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))
        status = "0/1     CrashLoopBackOff   57 (3m ago)" if i == 211 else "1/1     Running   0"
        rows.append(f"{name:28s}{status}   4h")
    out = ToolOutputFilter()("\n".join(rows), command="kubectl get pods", goal="Which pod fails?")
    assert out.kind == "generic" and out.shortened
    assert rows[212] in out.text.splitlines()
