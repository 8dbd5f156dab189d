"""Tool-output filters on realistic outputs: each kind is recognised, keeps what an agent needs
verbatim, drops the noise, and says where the original is."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxpack import ConfigError, count_tokens
from ctxpack.filters import (
    DiagnosticFilter,
    DiffFilter,
    FileViewFilter,
    GenericFilter,
    JSONPayloadFilter,
    ListingFilter,
    ToolOutput,
    ToolOutputFilter,
    command_program,
    default_filters,
    is_note,
    original_note,
)
from ctxpack.store import SQLiteArtifactStore, artifact_id

from ..helpers import ORIGINAL_NOTE

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tool_outputs"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def kept_lines(text: str) -> list[str]:
    """The lines of a filtered output that are not notes or the marker."""
    return [line for line in text.split("\n") if not is_note(line)]


def is_subsequence(kept: list[str], lines: list[str]) -> bool:
    remaining = iter(lines)
    return all(any(line == candidate for candidate in remaining) for line in kept)


def tokens(text: str) -> int:
    return count_tokens(text, model="gpt-4")


# (fixture, command, kind, lines that must survive verbatim)
CASES = [
    (
        "pytest_failures.txt",
        "python -m pytest",
        "test_run",
        [
            "_________________________ test_vat_rounding[FR-0.2] __________________________",
            "E       AssertionError: assert Decimal('11.994') == Decimal('11.99')",
            "tests/test_taxes.py:57: AssertionError",
            "E       AttributeError: 'NoneType' object has no attribute 'read_text'",
            "tests/test_export.py:21: AttributeError",
            "=" * 24 + " 2 failed, 143 passed, 3 skipped in 4.87s " + "=" * 24,
        ],
    ),
    (
        "django_runner.txt",
        "./tests/runtests.py queries",
        "test_run",
        [
            "FAIL: test_ticket_24605 (queries.tests.Ticket23605Tests)",
            "ERROR: test_union_distinct (queries.test_qs_combinators.QuerySetSetOperationTests)",
            '  File "/testbed/tests/queries/tests.py", line 3601, in test_ticket_24605',
            "AssertionError: Sequences differ: <QuerySet []> != "
            "[<Individual: Individual object (4)>]",
            "django.db.utils.NotSupportedError: Calling QuerySet.distinct() after union() is not "
            "supported.",
            "Ran 72 tests in 1.215s",
            "FAILED (failures=1, errors=1)",
        ],
    ),
    (
        "go_test.txt",
        "go test ./...",
        "test_run",
        [
            "    retry_test.go:47: budget after 3 retries = 250ms, want 300ms",
            "--- FAIL: TestRetryBudget (0.01s)",
            "FAIL\tgithub.com/acme/netkit/retry\t0.214s",
            "ok  \tgithub.com/acme/netkit/parse\t0.108s",
        ],
    ),
    (
        "cargo_test.txt",
        "cargo test",
        "test_run",
        [
            "---- retry::tests::budget_is_spent stdout ----",
            "thread 'retry::tests::budget_is_spent' panicked at src/retry.rs:88:9:",
            "test result: FAILED. 37 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; "
            "finished in 0.02s",
        ],
    ),
    (
        "traceback.txt",
        "python manage.py loaddata users",
        "traceback",
        [
            '  File "/srv/app/manage.py", line 22, in <module>',
            '  File "/srv/app/billing/fields.py", line 41, in to_python',
            "    return Decimal(value).quantize(self.places)",
            "decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]",
            "During handling of the above exception, another exception occurred:",
            "django.core.exceptions.ValidationError: ['“12,50” value must be a decimal number.']",
        ],
    ),
    (
        "cargo_build.txt",
        "cargo build",
        "diagnostics",
        [
            "error[E0308]: mismatched types",
            "  --> src/retry.rs:40:9",
            "  --> src/retry.rs:75:14",
            "warning: unused variable: `jitter`",
            "error: could not compile `netkit` (lib) due to 6 previous errors; 1 warning emitted",
        ],
    ),
    (
        "pip_install.txt",
        "pip install -r requirements.txt",
        "build_log",
        [
            "ERROR: pip's dependency resolver does not currently take into account all the "
            "packages that are installed. This behaviour is the source of the following "
            "dependency conflicts.",
            "great-expectations 0.18.12 requires numpy<1.26, but you have numpy 1.26.4 which is "
            "incompatible.",
            "WARNING: pandas 2.2.2 does not provide the extra 'performance'",
            "Successfully installed numpy-1.26.4 pandas-2.2.2 pyarrow-16.1.0 "
            "python-dateutil-2.9.0 pytz-2024.1 six-1.16.0 tzdata-2024.1",
        ],
    ),
    (
        "grep_hits.txt",
        "grep -rn compute_vat src tests",
        "listing",
        [],
    ),
    (
        "cat_tax_py.txt",
        "cat src/billing/tax.py",
        "file_view",
        [
            "def compute_vat(invoice, country):",
            "    return (total * rate).quantize(Decimal('0.001'))  # should round to cents",
        ],
    ),
    (
        "git_diff.txt",
        "git diff",
        "diff",
        [
            "diff --git a/src/billing/tax.py b/src/billing/tax.py",
            "-    return (total * rate).quantize(Decimal('0.001'))  # should round to cents",
            "+    return (total * rate).quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)",
            "+++ b/tests/test_tax.py",
            "+def test_rounding_half_up():",
        ],
    ),
    (
        "worker_log.txt",
        "./run_worker.sh",
        "generic",
        [
            "waiting for lock /var/run/billing.lock",
            "WARNING: batch 17 took 12.4s (limit 10s)",
            "ERROR: batch 29 failed: connection reset by peer (db:5432)",
            "worker pool stopped: 39 ok, 1 failed",
        ],
    ),
]

GOAL = "why does compute_vat round wrong for FR invoices"


@pytest.mark.parametrize(("name", "command", "kind", "must_keep"), CASES)
def test_each_kind_is_detected_and_keeps_what_matters(
    name: str, command: str, kind: str, must_keep: list[str]
) -> None:
    raw = fixture(name)
    store = SQLiteArtifactStore()
    out = ToolOutputFilter()(raw, tool="bash", command=command, goal=GOAL, store=store)
    assert out.kind == kind
    assert out.shortened
    assert tokens(out.text) < tokens(raw) * 0.8
    kept = kept_lines(out.text)
    for line in must_keep:
        assert line in kept, line
    # Extractive: every kept line is a line of the original, in the original order.
    if kind == "diagnostics":  # grouped by file: verbatim, not in order
        assert set(kept) <= set(raw.split("\n"))
    else:
        assert is_subsequence(kept, raw.split("\n"))
    # The marker names the stored original and how to read more of it.
    assert out.artifact == artifact_id(raw)
    assert store.get(out.artifact) == raw
    last = out.text.split("\n")[-1]
    assert last.startswith("[ctxpack: ") and out.artifact in last
    assert 'retrieve_original(artifact="' in last


def test_a_test_run_cut_before_its_totals_is_shortened_as_any_output() -> None:
    # A shell tool's output limit or a timeout cuts the run before its totals: read as a test
    # run by its command, it was sent whole (100,890 characters here).
    raw = "".join(f"tests/test_{i}.py::test_x PASSED\n" for i in range(3000))
    raw += "tests/test_db.py::test_connect ERROR: connection refused\n"
    raw += "".join(f"tests/test_z{i}.py::test_y PASSED\n" for i in range(200))
    out = ToolOutputFilter()(raw, tool="shell", command="pytest -v")
    assert out.kind == "test_run" and out.shortened
    assert "no totals read" in out.reason
    assert "tests/test_db.py::test_connect ERROR: connection refused" in kept_lines(out.text)
    assert len(out.text) < len(raw) // 10


@pytest.mark.parametrize(
    "command", ["cat src/_pytest/unittest.py", "head -50 jest.config.js", "cat docs/pytest.rst"]
)
def test_a_file_named_after_a_test_runner_is_not_a_test_run(command: str) -> None:
    # The runner's name was read anywhere in the command, so a file view of pytest's own
    # unittest.py (a real session's) went to the test-run filter.
    source = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n" for i in range(300))
    out = ToolOutputFilter()(source, tool="bash", command=command)
    assert out.kind != "test_run"


def test_jest_log_becomes_a_few_lines() -> None:
    """A ~2,000-token jest log: "14 tests passed. refreshes expired token failed: expiresAt
    was undefined at auth.test.ts:88. Full output: artifact ..." """
    raw = fixture("jest_auth.txt")
    assert 1_800 <= tokens(raw) <= 2_600
    out = ToolOutputFilter()(raw, tool="bash", command="npm test")
    assert out.kind == "test_run" and out.shortened
    assert tokens(out.text) <= 0.2 * tokens(raw)
    kept = kept_lines(out.text)
    assert "Tests:       1 failed, 14 passed, 15 total" in kept
    assert "  ● AuthService › refreshes expired token" in kept
    assert "    Received: undefined" in kept
    assert "    > 88 |     expect(session.expiresAt).toBeDefined();" in kept
    assert "      at Object.<anonymous> (src/auth/auth.test.ts:88:31)" in kept
    # Noise is gone: passing tests, console logs, library frames, the coverage table.
    text = out.text
    assert "✓" not in text and "console.log" not in text
    assert "jest-circus" not in text and "% Stmts" not in text
    assert out.artifact is not None and out.artifact in text.split("\n")[-1]


def test_listing_groups_and_counts_what_it_hides() -> None:
    raw = fixture("grep_hits.txt")
    out = ListingFilter(per_group=5).extract(ToolOutput(raw, command="grep -rn compute_vat ."))
    assert out is not None
    text = out.text
    for path in ("src/billing/invoice.py", "src/billing/tax.py", "src/api/views.py"):
        assert f"[… 13 more in {path} hidden]" in text
        assert sum(line.startswith(path + ":") for line in text.split("\n")) == 5


def test_ls_recursive_collapses_long_directories() -> None:
    raw = fixture("ls_recursive.txt")
    out = ListingFilter(per_group=4).extract(ToolOutput(raw, command="ls -R"))
    assert out is not None
    lines = out.text.split("\n")
    assert "./src/billing:" in lines and "[… 28 more in ./src/billing hidden]" in lines
    assert "./src/core:" in lines and "settings.py" in lines  # a short group stays whole


def test_a_recursive_listing_shows_groups_from_every_top_level_folder() -> None:
    # 60 folders of generated docs come first in the listing: taken in order, they would fill
    # every group shown in full and hide src/ whole, header and all.
    lines = []
    for v in range(60):
        lines += [f"./docs/javadoc/{v}:", "index.html", "overview.html", ""]
    lines += ["./src/main/java/com/acme/xml:", "XmlMapper.java", "XmlFactory.java", ""]
    out = ListingFilter(max_groups=10).extract(ToolOutput("\n".join(lines), command="ls -R"))
    assert out is not None
    shown = out.text.split("\n")
    assert "./src/main/java/com/acme/xml:" in shown and "XmlMapper.java" in shown
    # The groups shown keep the listing's order, and the docs fill the remaining slots.
    assert shown.index("./docs/javadoc/0:") < shown.index("./src/main/java/com/acme/xml:")
    assert sum(line.startswith("./docs/javadoc/") for line in shown) == 9


def test_listing_shows_entries_naming_the_goal_first() -> None:
    raw = fixture("ls_recursive.txt")
    out = ListingFilter(per_group=3).extract(ToolOutput(raw, command="ls -R", goal="test_tax"))
    assert out is not None and "test_tax.py" in out.text.split("\n")


def test_a_listing_finds_the_goal_in_the_pieces_of_joined_names() -> None:
    # The goal says "napoleon"; the entries join it into longer names, past the first ones.
    names = [f"test_area{i}.py" for i in range(40)]
    names += ["test_ext_napoleon.py", "test_ext_napoleon_docstring.py"]
    names += [f"test_zone{i}.py" for i in range(40)]
    goal = "Napoleon: a docstring's attribute type is not a link"
    out = ListingFilter(per_group=4).extract(
        ToolOutput("\n".join(names), command="ls tests", goal=goal)
    )
    assert out is not None
    shown = out.text.split("\n")
    assert "test_ext_napoleon.py" in shown and "test_ext_napoleon_docstring.py" in shown
    # The order of the listing is kept.
    assert shown.index("test_ext_napoleon.py") < shown.index("test_ext_napoleon_docstring.py")
    assert shown[-1] == "[… 78 more in this listing hidden]"


def test_a_word_most_entries_share_ranks_none_of_them() -> None:
    # "test" is in every entry and in the goal: it says nothing about one entry. The entry
    # holding two other goal words comes first, then the first of those holding one.
    names = [f"test_area{i}.py" for i in range(30)]
    names += ["test_units.py", "test_dataset.py", "test_dataset_units.py"]
    goal = "the dataset test fails with units"
    out = ListingFilter(per_group=2).extract(
        ToolOutput("\n".join(names), command="ls tests", goal=goal)
    )
    assert out is not None
    shown = [line for line in out.text.split("\n") if not is_note(line)]
    assert shown == ["test_units.py", "test_dataset_units.py"]


def test_a_listing_without_a_goal_shows_its_first_entries() -> None:
    # With no goal there is nothing to rank by: entries holding more words do not come first.
    names = [f"mod{k}.py" for k in range(30)] + [f"beta_gamma_delta{k}.py" for k in range(10)]
    out = ListingFilter(per_group=3).extract(ToolOutput("\n".join(names), command="ls tests"))
    assert out is not None
    assert out.text.split("\n")[:3] == names[:3]


def test_diagnostics_are_unique_and_grouped_by_file() -> None:
    raw = fixture("mypy.txt")
    out = DiagnosticFilter().extract(ToolOutput(raw, command="mypy src"))
    assert out is not None
    lines = [line for line in out.text.split("\n") if not is_note(line)]
    union = 'src/api/views.py:88: error: Item "None" of "Optional[User]" has no attribute "email"'
    assert sum(line.startswith(union) for line in lines) == 1
    assert "[… repeated 3 more times]" in out.text
    files = [line.split(":")[0] for line in lines if line.startswith("src/")]
    # Grouped: once a file's block ends, the file does not come back.
    blocks = [f for i, f in enumerate(files) if i == 0 or files[i - 1] != f]
    assert len(blocks) == len(set(blocks)) == 3
    assert lines[-1] == "Found 35 errors in 3 files (checked 57 source files)"


def test_json_payload_stays_valid_and_keeps_original_values() -> None:
    raw = fixture("api_issues.json")
    out = ToolOutputFilter()(raw, tool="search_issues", goal="VAT rounding error")
    assert out.kind == "json" and out.shortened
    body = "\n".join(out.text.split("\n")[:-1])
    slim = json.loads(body)
    original = json.loads(raw)
    assert "next_cursor" not in slim and "per_page" not in slim
    titles = [item["title"] for item in slim["items"] if isinstance(item, dict)]
    assert "Error: VAT rounding off by one cent on FR invoices" in titles
    assert all("id" not in item and "url" not in item for item in slim["items"][:-1])
    assert slim["items"][-1].startswith("[… ") and slim["total_count"] == 40
    # Every value kept is the original's value for that item.
    by_number = {item["number"]: item for item in original["items"]}
    for item in slim["items"][:-1]:
        assert is_part_of(item, by_number[item["number"]])


def is_part_of(slim: object, original: object) -> bool:
    """Whether ``slim`` is ``original`` with keys and array items left out (and notes added)."""
    if isinstance(slim, dict):
        return isinstance(original, dict) and all(
            k in original and is_part_of(v, original[k]) for k, v in slim.items()
        )
    if isinstance(slim, list):
        return isinstance(original, list) and all(
            (isinstance(v, str) and v.startswith("[… ")) or any(is_part_of(v, o) for o in original)
            for v in slim
        )
    return slim == original


def test_json_keeps_a_noise_field_the_goal_names() -> None:
    doc = json.dumps({"items": [{"id": i, "name": f"n{i}"} for i in range(40)]})
    out = JSONPayloadFilter().extract(ToolOutput(doc, goal="which id has name n3"))
    assert out is not None and '"id":0' in out.text


def _lockfile(packages: int) -> dict[str, object]:
    """A package-lock.json: its ``packages`` object is a map of thousands of entries."""
    entries = {
        f"node_modules/pkg-{i}": {
            "version": f"{i % 9}.{i % 7}.{i % 5}",
            "integrity": f"sha512-{i:08d}" + "Ab3" * 28,
            "license": "MIT",
        }
        for i in range(packages)
    }
    entries["node_modules/pkg-1203"]["deprecated"] = "failed audit: critical vulnerability"
    entries["node_modules/7781"] = {"version": "2.0.0", "license": "ISC"}
    return {"name": "app", "lockfileVersion": 3, "packages": entries}


def test_json_map_of_thousands_of_keys_keeps_a_few_entries_and_says_how_many_went() -> None:
    # Not a record but a map: sent whole before (no array to collapse, "nothing to drop").
    doc = _lockfile(1_500)
    raw = json.dumps(doc)
    out = JSONPayloadFilter().extract(ToolOutput(raw, goal="which version of 7781 is locked?"))
    assert out is not None and len(out.text) < len(raw) / 50
    slim = json.loads(out.text)
    packages = slim["packages"]
    (marker,) = [k for k in packages if k.startswith("[… ")]
    assert packages.pop(marker) is None
    count = re.fullmatch(r"\[… (\d+) more keys hidden\]", marker)
    assert count is not None
    hidden = int(count[1])
    # The first entries, then up to as many again: the one the goal names by its key, the one
    # that looks like an error.
    assert len(packages) + hidden == 1_501 and len(packages) <= 10
    assert list(packages)[:5] == [f"node_modules/pkg-{i}" for i in range(5)]
    assert {"node_modules/pkg-1203", "node_modules/7781"} <= set(packages)
    assert is_part_of(slim, doc)
    assert f"{hidden} entries of objects over 50 keys hidden" in out.summary
    # Through the public filter too, whether or not pretty-printed.
    for text in (raw, json.dumps(doc, indent=2)):
        filtered = ToolOutputFilter()(text, tool="npm_lock")
        assert filtered.kind == "json" and filtered.shortened
        assert len(filtered.text) < len(text) / 50


def test_json_record_within_max_keys_is_kept_whole() -> None:
    record = {f"field_{k}": f"value {k}" for k in range(50)}
    assert JSONPayloadFilter().extract(ToolOutput(json.dumps(record))) is None
    record["field_50"] = "one too many"
    out = JSONPayloadFilter().extract(ToolOutput(json.dumps(record)))
    assert out is not None and "[… 46 more keys hidden]" in json.loads(out.text)
    assert JSONPayloadFilter(max_keys=51).extract(ToolOutput(json.dumps(record))) is None


@pytest.mark.parametrize("argument", ["max_items", "max_keys"])
@pytest.mark.parametrize("bad", [0, -1, True, 5.0, "5"])
def test_json_limits_must_be_positive_ints(argument: str, bad: object) -> None:
    with pytest.raises(ConfigError, match=argument):
        JSONPayloadFilter(**{argument: bad})  # type: ignore[arg-type]


def _commit(files: int, changes: int) -> list[str]:
    """A diff of ``files`` files of ``changes`` changed lines each."""
    lines = []
    for f in range(files):
        name = "src/billing/tax.py" if f == files - 2 else f"vendor/lib_{f}/module.py"
        lines += [f"diff --git a/{name} b/{name}", f"--- a/{name}", f"+++ b/{name}", "@@ -1 +1 @@"]
        lines += [f"+line {k} of file {f}" for k in range(changes)]
    return lines


def test_a_diff_of_hundreds_of_files_keeps_the_goals_files_then_the_first_within_a_budget() -> None:
    # A commit of vendored files went whole but for 80 changed lines per file: the final diff of
    # a real session (868,167 characters) still sent 72,003 tokens.
    diff = "\n".join(_commit(300, 30))
    goal = "check the change to tax.py before submitting"
    out = DiffFilter().extract(ToolOutput(diff, command="git diff --cached", goal=goal))
    assert out is not None
    kept = out.text.split("\n")
    # Every file is still named by its first line.
    assert sum(line.startswith("diff --git") for line in kept) == 300
    # The goal's file first, whatever its place, then the first files, within 400 lines.
    assert "+line 29 of file 298" in kept
    assert "+line 29 of file 0" in kept and "+line 0 of file 200" not in kept
    assert sum(line.startswith("+line") for line in kept) <= 400
    assert "files past 400 lines in all shown by their first line" in out.summary
    # Within the budget, the diff is shortened as before; with a larger one, kept whole.
    assert DiffFilter(max_total_lines=20_000).extract(ToolOutput(diff, command="git diff")) is None
    small = "\n".join(_commit(3, 30))
    assert DiffFilter().extract(ToolOutput(small, command="git diff")) is None


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "400"])
def test_diff_total_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(ConfigError, match="max_total_lines"):
        DiffFilter(max_total_lines=bad)  # type: ignore[arg-type]


def test_file_view_is_whole_up_to_its_size() -> None:
    raw = "\n".join(f"line {i}" for i in range(100))
    assert FileViewFilter(max_lines=120).extract(ToolOutput(raw, command="cat a.txt")) is None


def test_file_view_windows_keep_line_numbers_of_numbered_views() -> None:
    raw = "\n".join(f"{i:6d}\tvalue_{i} = compute({i})" for i in range(1, 400))
    view = ToolOutput(raw, command="nl -ba m.py", goal="where is value_250 set?")
    out = FileViewFilter(max_lines=30, radius=2).extract(view)
    assert out is not None
    assert "   250\tvalue_250 = compute(250)" in out.text.split("\n")
    assert "[… 246 lines hidden: 4-249]" not in out.text  # windows, not one block
    assert re.search(r"\[… \d+ lines hidden: 4-247\]", out.text)


def test_short_output_passes_untouched() -> None:
    out = ToolOutputFilter()("3 passed in 0.01s", command="pytest")
    assert out.text == "3 passed in 0.01s" and not out.shortened and out.kind == "short"


def test_without_the_retrieve_tool_the_marker_only_says_what_was_shortened() -> None:
    out = ToolOutputFilter(retrievable=False)(fixture("jest_auth.txt"), command="npm test")
    last = out.text.split("\n")[-1]
    assert out.artifact is not None and out.artifact in last
    assert "retrieve" not in last


@pytest.mark.parametrize("retrievable", [True, False])
def test_the_marker_names_the_original_as_every_note_does(retrievable: bool) -> None:
    out = ToolOutputFilter(retrievable=retrievable)(fixture("jest_auth.txt"), command="npm test")
    note = ORIGINAL_NOTE.fullmatch(out.text.split("\n")[-1])
    assert note is not None and note.group(1) == out.artifact


@pytest.mark.parametrize("lines", [None, 120])
@pytest.mark.parametrize("retrievable", [True, False])
def test_an_original_note_says_what_was_done_where_the_original_is_and_how_to_read_it(
    lines: int | None, retrievable: bool
) -> None:
    ref = "art_0123456789abcdef"
    note = original_note("old output cleared", ref, lines=lines, retrievable=retrievable)
    match = ORIGINAL_NOTE.fullmatch(note)
    assert match is not None and match.group(1) == ref
    assert note.startswith("[ctxpack: old output cleared; original: ")
    assert ("120 lines" in note) == (lines is not None)
    # A note on an output the model sees part of offers a line range; the call names the id.
    assert (f'retrieve_original(artifact="{ref}"' in note) == retrievable
    assert ('lines="A-B"' in note) == (retrievable and lines is not None)


def test_an_output_that_cannot_be_shortened_enough_is_kept_whole() -> None:
    raw = "\n".join(f"unique line {i} with /path/{i} and {i * 7}" for i in range(60))
    out = ToolOutputFilter(filters=[GenericFilter(max_lines=59)])(raw)
    assert not out.shortened and out.text == raw


def test_bad_configuration_is_refused_clearly() -> None:
    with pytest.raises(ConfigError, match="min_chars"):
        ToolOutputFilter(min_chars=-1)
    with pytest.raises(ConfigError, match="not an output filter"):
        ToolOutputFilter(filters=[object()])  # type: ignore[list-item]


def test_command_program_sees_through_wrappers() -> None:
    assert command_program("cd /testbed && python -m pytest -x tests") == "pytest"
    assert command_program("FOO=1 npx jest") == "jest"
    assert command_program("sudo /usr/bin/pip install x") == "pip"
    assert command_program("nl -ba x.py | sed -n '1,20p'") == "nl"


# ----------------------------------------------------------------- properties over all filters

_LINE = st.one_of(
    st.sampled_from(
        [
            "ok",
            "FAILED tests/test_a.py::test_x - AssertionError: 1 != 2",
            "E   assert 3 == 4",
            "src/app/models.py:120: error: bad type  [misc]",
            "Traceback (most recent call last):",
            '  File "/srv/app/x.py", line 12, in f',
            "ValueError: 42",
            "==== 1 failed, 9 passed in 0.52s ====",
            "Collecting numpy==1.26.4",
            "./src:",
            "diff --git a/x b/x",
            "+++ b/x",
            "@@ -1,3 +1,3 @@",
            "-old 1",
            "+new 2",
            "",
        ]
    ),
    st.from_regex(r"[ -~]{0,60}", fullmatch=True),
)


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(_LINE, min_size=0, max_size=220),
    command=st.sampled_from(
        [
            None,
            "pytest",
            "mypy .",
            "pip install x",
            "ls -R",
            "cat f.py",
            "git diff",
            "python run.py",
            "grep -rn x .",
        ]
    ),
)
def test_filters_are_extractive_and_never_longer(lines: list[str], command: str | None) -> None:
    raw = "\n".join(lines)
    out = ToolOutputFilter(min_chars=0)(raw, command=command, goal="models x")
    assert len(out.text) <= len(raw)
    if not out.shortened:
        assert out.text == raw
        return
    raw_lines = set(raw.split("\n"))
    for line in out.text.split("\n"):
        # Kept lines are verbatim: numbers, paths and names are never rewritten.
        assert is_note(line) or line in raw_lines, line


def test_every_default_filter_says_its_kind() -> None:
    kinds = [f.kind for f in default_filters()]
    assert kinds == [
        "test_run",
        "diagnostics",
        "build_log",
        "diff",
        "file_view",
        "listing",
        "traceback",
        "json",
        "generic",
    ]


@pytest.mark.parametrize(
    ("command", "lines", "expected"),
    [
        (
            "npx tsc --noEmit",
            [
                f"src/api/routes.ts({i},5): error TS2322: Type 'string' is not assignable to type "
                "'number'."
                for i in range(10, 40)
            ]
            + [
                "src/api/routes.ts(10,5): error TS2322: Type 'string' is not assignable to type "
                "'number'."
            ]
            * 5
            + ["Found 35 errors in 1 file."],
            [
                "src/api/routes.ts(10,5): error TS2322: Type 'string' is not assignable to type "
                "'number'.",
                "[… repeated 5 more times]",
                "Found 35 errors in 1 file.",
            ],
        ),
        (
            "gcc -Wall -c main.c",
            [
                "main.c: In function 'main':",
                "main.c:4:5: error: 'count' undeclared (first use in this function)",
                "    4 |     count = 3;",
                "      |     ^~~~~",
                "main.c:9:12: warning: unused variable 'tmp' [-Wunused-variable]",
                "    9 |     int tmp;",
                "      |         ^~~",
            ]
            * 6,
            [
                "main.c:4:5: error: 'count' undeclared (first use in this function)",
                "main.c:9:12: warning: unused variable 'tmp' [-Wunused-variable]",
            ],
        ),
    ],
)
def test_compiler_and_type_checker_diagnostics(
    command: str, lines: list[str], expected: list[str]
) -> None:
    raw = "\n".join(lines)
    out = ToolOutputFilter(min_chars=0)(raw, command=command)
    assert out.kind == "diagnostics" and out.shortened
    kept = out.text.split("\n")
    for line in expected:
        assert line in kept
    assert "    4 |     count = 3;" not in kept  # code excerpts go, locations stay


@pytest.mark.parametrize("depth", [900, 3_000])
def test_json_nested_too_deep_to_read_is_left_to_other_filters(depth: int) -> None:
    # json.loads fails past the recursion limit; the slimming walk stops at 100 levels (it
    # raised RecursionError a little before json.loads did, and the payload went whole).
    items = ",".join(f'{{"id": {i}, "etag": "e{i}"}}' for i in range(300))
    doc = f'{{"items": [{items}], "deep": {"[" * depth}{"]" * depth}}}'
    slim = JSONPayloadFilter().extract(ToolOutput(doc))
    if depth == 900:
        assert slim is not None and "295 array items hidden" in slim.summary
        assert "1 values nested deeper than 100 levels hidden" in slim.summary
    else:
        assert slim is None
    # The public call returns (it raised RecursionError): another filter's result, or the whole.
    assert ToolOutputFilter()(doc).kind in {"json", "generic"}


# ------------------------------------------------------------------- lines too long to keep

BLOB = "".join(f"{i:05d}QmFzZTY0IGRhdGEgb2YgYW4gaW1hZ2U" for i in range(25_000))  # one line


def test_a_line_no_filter_shortens_is_cut_in_its_middle() -> None:
    # A base64 blob or minified code is one line: every filter of lines kept it whole, and a
    # session without a window sent all 800,000 characters of it.
    out = ToolOutputFilter()(f"$ cat bundle\n{BLOB}\ndone", command="cat bundle")
    assert out.shortened and "1 line over 4,000 characters cut" in out.summary
    lines = out.text.split("\n")
    assert max(map(len, lines)) < 4_100
    cut = next(line for line in lines if "characters hidden]" in line)
    assert BLOB.startswith(cut[:3_000]) and BLOB.endswith(cut[-1_000:])
    assert f"[… {len(BLOB) - 4_000} characters hidden]" in cut
    assert out.text.startswith("$ cat bundle\n") and ORIGINAL_NOTE.search(lines[-1])


def test_a_long_line_a_filter_keeps_is_cut_too() -> None:
    hits = [f"src/mod_{i}.py:{i}: import os" for i in range(300)]
    hits.insert(5, "static/app.min.js:1:" + "var a=1;" * 2_000)
    out = ToolOutputFilter()("\n".join(hits), command="grep -rn import .")
    assert out.kind == "listing" and out.shortened
    assert "over 4,000 characters cut" in out.summary
    assert max(map(len, out.text.split("\n"))) < 4_100


def test_a_json_payloads_long_strings_are_cut_and_it_stays_json() -> None:
    doc = {"name": "logo.png", "content": BLOB, "encoding": "base64"}
    out = ToolOutputFilter()(json.dumps(doc), tool="api_call")
    assert out.kind == "json" and out.shortened
    assert "1 strings over 4,000 characters cut" in out.summary
    slim = json.loads(out.text.split("\n")[0])
    assert slim["name"] == "logo.png" and "characters hidden]" in slim["content"]
    assert len(slim["content"]) < 4_100


def test_json_kept_whole_by_its_filter_still_has_its_long_lines_cut() -> None:
    # Forty strings under the string limit, no array, no noise field: nothing for the JSON
    # filter to drop, and the one line of 120,000 characters went whole.
    text = json.dumps({f"doc_{i}": "w" * 3_000 for i in range(40)})
    assert JSONPayloadFilter().extract(ToolOutput(text)) is None
    out = ToolOutputFilter()(text, tool="api")
    assert out.kind == "json" and out.shortened
    assert max(map(len, out.text.split("\n"))) < 4_100
    assert "1 line over 4,000 characters cut" in out.reason
    assert ToolOutputFilter(max_line_chars=None)(text, tool="api").text == text


def test_lines_are_kept_whole_when_asked() -> None:
    out = ToolOutputFilter(max_line_chars=None)(BLOB)
    assert not out.shortened and out.text == BLOB
    assert ToolOutputFilter(max_line_chars=len(BLOB))(BLOB).text == BLOB


@pytest.mark.parametrize("bad", [99, 0, True, 4_000.0, "4000"])
def test_line_and_string_limits_must_be_ints_of_100_or_more(bad: object) -> None:
    with pytest.raises(ConfigError, match="max_line_chars"):
        ToolOutputFilter(max_line_chars=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_string_chars"):
        JSONPayloadFilter(max_string_chars=bad)  # type: ignore[arg-type]
