from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

import ctxpack
import ctxpack.errors
from ctxpack import ConfigError
from ctxpack.code import DEFAULT_WEIGHTS, CodeIndex, _storage, iterative_retrieve
from ctxpack.code._symbols import parse_source
from tests.helpers import cpu_seconds
from tests.threads import run_threads, switching_often


def test_search_returns_symbol_units_best_first(repo: Path) -> None:
    hits = CodeIndex(repo, db=":memory:").search("decode the JWT claims", k=3)
    assert hits[0].path == "web/src/jwt.ts"
    assert hits[0].name == "decodeJwt"
    assert (hits[0].start_line, hits[0].end_line) == (8, 12)
    assert "export function decodeJwt" in hits[0].text
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(hits) == 3


def test_camel_and_snake_case_meet_prose(repo: Path) -> None:
    index = CodeIndex(repo, db=":memory:")
    assert index.search("next job", k=1)[0].name == "next_job"
    assert index.search("price with tax", k=1)[0].name == "priceWithTax"
    assert index.search("add invoice to the report", k=1)[0].name == "addInvoice"


def test_rank_files_signals(repo: Path) -> None:
    index = CodeIndex(repo, db=":memory:")
    ranked = index.rank_files("Crash in fetch_record when the key is missing", k=3)
    assert ranked[0].path == "api/storage.py"
    assert ranked[0].signals["definition"] == 1.0
    assert set(ranked[0].signals) == set(DEFAULT_WEIGHTS)
    # Naming the file is a signal of its own.
    named = index.rank_files("something is off in services/audit/audit.go", k=1)[0]
    assert named.path == "services/audit/audit.go"
    assert named.signals["mention"] == 1.0
    # The graph lends relevance to neighbours: db.py shares no word with the query.
    chain = [h.path for h in index.rank_files("fetch_record", k=10)]
    assert "api/db.py" in chain
    assert index.rank_files("fetch_record", k=10, exclude=["api/db.py"])[0].path != "api/db.py"


def test_graph_weight_zero_turns_proximity_off(repo: Path) -> None:
    index = CodeIndex(repo, db=":memory:", weights={"graph": 0.0})
    paths = [h.path for h in index.rank_files("fetch_record", k=10)]
    assert "api/db.py" not in paths
    with pytest.raises(ConfigError, match="unknown ranking signal"):
        CodeIndex(repo, weights={"pagerank": 1.0})


def test_index_is_incremental_and_persistent(repo: Path, tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    first = CodeIndex(repo, db=db)
    stats = first.refresh()
    assert stats.parsed == len(first.files) and stats.removed == 0
    first.close()

    second = CodeIndex(repo, db=db)
    assert second.refresh().model_dump() == {
        "parsed": 0,
        "removed": 0,
        "unchanged": len(first.files),
        "too_large": (),
        "invalid_names": (),
        "unreadable": (),
        "hard_linked": (),
    }
    # Touched but unchanged: its hash says so, nothing is parsed.
    target = repo / "api" / "db.py"
    later = time.time() + 5
    os.utime(target, (later, later))
    assert second.refresh().parsed == 0
    # Changed, added, removed.
    target.write_text(target.read_text() + "\n\ndef disconnect():\n    pass\n")
    (repo / "api" / "cache.py").write_text("def evict():\n    pass\n")
    (repo / "web" / "legacy" / "pricing.js").unlink()
    stats = second.refresh()
    assert (stats.parsed, stats.removed) == (2, 1)
    assert second.search("disconnect", k=1)[0].name == "disconnect"
    assert "web/legacy/pricing.js" not in second.files
    second.close()
    # A third index reads what the second stored.
    third = CodeIndex(repo, db=db)
    assert third.refresh().parsed == 0
    assert third.search("evict", k=1)[0].path == "api/cache.py"


def test_a_refresh_reads_a_parse_another_index_of_the_root_stored(
    repo: Path, tmp_path: Path
) -> None:
    # Both share the file (as CodeIndex(root) and iterative_retrieve(task, root) share the
    # default one): the second stores the edit with the file's new time and size, and the
    # first, seeing them in the row, kept its own old parse as "unchanged".
    db = tmp_path / "index.sqlite"
    first = CodeIndex(repo, db=db)
    assert first.rank_files("refund payment") == []
    target = repo / "api" / "db.py"
    target.write_text(target.read_text() + "\n\ndef refund_payment(order):\n    pass\n")
    assert [h.path for h in CodeIndex(repo, db=db).rank_files("refund payment")] == ["api/db.py"]
    stats = first.refresh()
    assert (stats.parsed, stats.removed) == (0, 0)
    assert "refund_payment" in [s.name for s in first.symbols_of("api/db.py")]
    assert [h.path for h in first.rank_files("refund payment")] == ["api/db.py"]


def test_an_edit_that_keeps_the_files_time_and_size_is_seen(repo: Path, tmp_path: Path) -> None:
    # cp -p, rsync -a and tar restore a file's time: with its size unchanged, the row's time
    # and size matched and the index kept the old parse for good. The change time gives it away.
    db = tmp_path / "index.sqlite"
    target = repo / "api" / "db.py"
    an_hour_ago = time.time_ns() - 3600 * 10**9
    os.utime(target, ns=(an_hour_ago, an_hour_ago))
    assert CodeIndex(repo, db=db).rank_files("refund payment") == []
    text = target.read_text()
    edited = text.replace("def ", "def refund_payment_", 1)
    target.write_text(edited[: len(text)] if len(edited) > len(text) else edited)
    os.utime(target, ns=(an_hour_ago, an_hour_ago))
    assert target.stat().st_size == len(text.encode())
    index = CodeIndex(repo, db=db)
    assert index.refresh().parsed == 1
    assert [h.path for h in index.rank_files("refund payment")][:1] == ["api/db.py"]


def test_a_row_read_within_the_clocks_tick_of_an_edit_is_checked_again(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two same-size writes within one tick of the file system's clock leave every time as it
    # was (git's "racily clean" entries): a row read so soon after the file's last
    # modification is compared by content at the next refresh.
    db = tmp_path / "index.sqlite"
    target = repo / "api" / "db.py"
    text = target.read_text()
    target.write_text(text)  # modified now, as an agent's edit is
    first = CodeIndex(repo, db=db)
    first.refresh()
    walk = _storage.source_files
    seen = dict(walk(first.root, lambda *_: False))
    target.write_text(text.replace("def ", "def refund_payment_", 1)[: len(text)])

    def as_before(root: Path, known: Any, **options: Any) -> list[tuple[str, os.stat_result]]:
        return [(rel, seen.get(rel, stat)) for rel, stat in walk(root, known, **options)]

    monkeypatch.setattr(_storage, "source_files", as_before)
    assert first.refresh().parsed == 1
    assert [h.path for h in first.rank_files("refund payment")][:1] == ["api/db.py"]


def test_a_file_too_large_to_be_code_is_left_out_and_named(repo: Path, tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    index = CodeIndex(repo, db=db)
    index.refresh()
    table = repo / "api" / "table.py"
    row = "ROW = ('refund', 'payment', 1, 2, 3)\n"
    table.write_text(row * (_storage.MAX_SOURCE_BYTES // len(row) + 1))
    stats = index.refresh()
    assert stats.too_large == ("api/table.py",)
    assert (stats.parsed, stats.removed) == (0, 0)
    assert "api/table.py" not in index.files
    # Cut under the limit, it is code again; grown past it, it leaves the index.
    table.write_text(row * 10)
    assert index.refresh().parsed == 1
    assert "api/table.py" in index.files
    table.write_text(row * (_storage.MAX_SOURCE_BYTES // len(row) + 1))
    stats = index.refresh()
    assert (stats.removed, stats.too_large) == (1, ("api/table.py",))


def test_indexes_counting_otherwise_never_mix_their_counts_in_one_file(
    repo: Path, tmp_path: Path
) -> None:
    # cl100k_base's index wrote its count of an edit into the file the o200k_base index had
    # rebuilt as its own, and a third index read that count as o200k_base's.
    db = tmp_path / "index.sqlite"
    target = repo / "api" / "db.py"
    first = CodeIndex(repo, db=db, counter="cl100k_base")
    first.refresh()
    CodeIndex(repo, db=db, counter="o200k_base").refresh()
    target.write_text(target.read_text() + "\n# 日本語のテキスト: " + "東京 1234 " * 50 + "\n")
    first.refresh()
    assert first.tokens("api/db.py") == first.counter.count(target.read_text())
    third = CodeIndex(repo, db=db, counter="o200k_base")
    assert third.tokens("api/db.py") == third.counter.count(target.read_text())
    assert third.tokens("api/db.py") != first.tokens("api/db.py")


def test_another_applications_database_is_refused_untouched(repo: Path, tmp_path: Path) -> None:
    db = tmp_path / "app.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE files (id INTEGER, owner TEXT)")
        conn.execute("INSERT INTO files VALUES (1, 'ada')")
    conn.close()
    with pytest.raises(ConfigError, match="another application's SQLite database"):
        CodeIndex(repo, db=db).refresh()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT * FROM files").fetchall() == [(1, "ada")]
    conn.close()


def test_a_row_that_cannot_be_read_is_parsed_again(repo: Path, tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    CodeIndex(repo, db=db).refresh()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE files SET parsed = '{not json' WHERE path = 'api/db.py'")
    conn.close()
    index = CodeIndex(repo, db=db)
    assert index.refresh().parsed == 1
    assert index.symbols_of("api/db.py") == CodeIndex(repo, db=":memory:").symbols_of("api/db.py")
    assert CodeIndex(repo, db=db).refresh().parsed == 0  # written anew


def test_a_database_that_fails_is_a_store_error_naming_it(repo: Path) -> None:
    with pytest.raises(ctxpack.errors.StoreError, match="/dev/null: open the code index failed"):
        CodeIndex(repo, db="/dev/null").refresh()


def test_a_refresh_holds_no_write_lock_while_it_parses(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Indexes of one root share its file. Parsing inside the write transaction held the lock
    # for the whole build, and another builder failed with sqlite3's "database is locked"
    # once a build outlasted the busy timeout.
    db = tmp_path / "index.sqlite"
    CodeIndex(repo, db=db).refresh()
    for i in range(3):
        (repo / f"mod{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    writes: list[str] = []

    def parse_then_write(*args: Any) -> Any:
        with sqlite3.connect(db, timeout=0.1) as other:
            other.execute("INSERT OR REPLACE INTO meta VALUES ('probe', ?)", (str(args[0]),))
        other.close()
        writes.append(args[0])
        return parse_source(*args)

    monkeypatch.setattr("ctxpack.code._parallel.parse_source", parse_then_write)
    assert CodeIndex(repo, db=db).refresh().parsed == 3
    assert len(writes) == 3


def test_builders_of_one_root_sharing_a_file_all_succeed(repo: Path, tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    with switching_often():
        run_threads(lambda _: CodeIndex(repo, db=db).refresh(), 4)
    assert CodeIndex(repo, db=db).refresh().parsed == 0


def test_default_db_lives_in_the_cache_folder(repo: Path, tmp_path: Path) -> None:
    index = CodeIndex(repo)
    index.refresh()
    assert Path(index.db).is_file()
    assert Path(index.db).is_relative_to(tmp_path / "cache")
    assert not (repo / ".ctxpack").exists()


def test_a_db_that_cannot_hold_an_index_is_refused_when_given(repo: Path, tmp_path: Path) -> None:
    """The index opens its file at the first search: a folder or a foreign file given as ``db``
    is named at construction, not by a search much later."""
    with pytest.raises(ConfigError, match=r"db: .* is a folder"):
        CodeIndex(repo, db=tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n")
    with pytest.raises(ConfigError, match=r"db: .* is not an SQLite database"):
        CodeIndex(repo, db=notes)
    assert notes.read_text() == "not a database\n"
    # A new path, an empty file and an existing index are all fine.
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    for db in (tmp_path / "new.sqlite", empty):
        CodeIndex(repo, db=db).refresh()
    assert CodeIndex(repo, db=empty).refresh().parsed == 0


def test_tokens_and_errors(repo: Path, tmp_path: Path) -> None:
    index = CodeIndex(repo, db=":memory:")
    assert index.tokens() == sum(index.tokens(p) for p in index.files)
    assert index.tokens("api/db.py") == index.counter.count(index.read("api/db.py"))
    with pytest.raises(ConfigError, match="not an indexed source file"):
        index.parsed("README.md")
    with pytest.raises(ConfigError, match="k must be a positive int"):
        index.search("x", k=0)
    with pytest.raises(ConfigError, match="not a directory"):
        CodeIndex(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert CodeIndex(empty, db=":memory:").search("anything") == []


def test_a_warm_search_does_not_index_again(repo: Path) -> None:
    index = CodeIndex(repo, db=":memory:")
    build = cpu_seconds(lambda: index.search("warm up"), repeat=1)
    query = cpu_seconds(lambda: index.search("refresh the session token before it expires"))
    # Generous: the fixture is tiny; this catches re-indexing on every query.
    assert query < build / 3


def test_a_qualified_name_points_at_the_class_that_defines_the_member(tmp_path: Path) -> None:
    (tmp_path / "marks.py").write_text(
        "class Expression:\n    def compile(self, text):\n        return text\n"
    )
    (tmp_path / "algebra.py").write_text(
        "class Expression:\n    def simplify(self):\n        return self\n\n\n"
        "def compile_all(expressions):\n    return expressions\n"
    )
    index = CodeIndex(tmp_path, db=":memory:")
    ranked = index.rank_files("Expression.compile('False') crashes the interpreter", k=2)
    assert ranked[0].path == "marks.py"
    assert ranked[0].signals["definition"] == 1.0
    assert ranked[1].signals["definition"] < 1.0


def test_the_graph_follows_what_the_best_files_import_and_call(tmp_path: Path) -> None:
    """Personalised PageRank: relevance flows from the files that match to the code they use,
    not to the code that uses them."""
    (tmp_path / "invoice.py").write_text(
        "from ledger import post_entry\n\n\n"
        "def issue_invoice(customer, amount):\n"
        "    '''Issue an invoice for a customer.'''\n"
        "    return post_entry(customer, amount)\n"
    )
    (tmp_path / "ledger.py").write_text("def post_entry(account, value):\n    return value\n")
    (tmp_path / "billing_job.py").write_text(
        "from invoice import issue_invoice\n\n\ndef run(rows):\n"
        "    return [issue_invoice(r, 1) for r in rows]\n"
    )
    index = CodeIndex(tmp_path, db=":memory:")
    signals = {h.path: h.signals for h in index.rank_files("issue an invoice for a customer")}
    assert signals["ledger.py"]["graph"] == 1.0
    assert signals.get("billing_job.py", {"graph": 0.0})["graph"] == 0.0


def test_a_quoted_error_message_points_at_the_code_that_raises_it(tmp_path: Path) -> None:
    """The issue's traceback ends with the error in the raising code's own words; the values
    filled in and a docstring using the same words do not count."""
    (tmp_path / "series.py").write_text(
        "class TimeSeries:\n"
        "    '''A table whose first column must be time, then the other columns.'''\n\n"
        "    def check(self, names):\n"
        "        if names[0] != 'time':\n"
        "            raise ValueError(\n"
        "                f\"{type(self).__name__} object is invalid - expected 'time' \"\n"
        "                f\"as the first column but found '{names[0]}'\"\n"
        "            )\n"
    )
    (tmp_path / "table.py").write_text(
        "def first_column(table):\n"
        "    '''The first column of the table; this object is invalid when expected\n"
        "    columns are missing.'''\n"
        "    return table[0]\n"
    )
    issue = (
        "Removing a required column gives a confusing error:\n"
        "ValueError: TimeSeries object is invalid - expected 'time' as the first column but "
        "found 'flux'"
    )
    ranked = CodeIndex(tmp_path, db=":memory:").rank_files(issue, k=2)
    assert ranked[0].path == "series.py"
    assert ranked[0].signals["message"] == 1.0
    assert ranked[1].signals["message"] == 0.0
    off = CodeIndex(tmp_path, db=":memory:", weights={"message": 0.0}).rank_files(issue, k=2)
    assert off[0].signals["message"] == 1.0  # still reported, weighed 0


@pytest.fixture
def package_repo(tmp_path: Path) -> Path:
    (tmp_path / "sky" / "wcs").mkdir(parents=True)
    (tmp_path / "sky" / "__init__.py").write_text("")
    (tmp_path / "sky" / "wcs" / "__init__.py").write_text("from .wcs import WCS\n")
    (tmp_path / "sky" / "wcs" / "wcs.py").write_text("class WCS:\n    '''A projection.'''\n")
    (tmp_path / "sky" / "wcs" / "slicing.py").write_text("def cut(wcs):\n    return wcs\n")
    return tmp_path


def test_a_dotted_name_is_matched_as_written(package_repo: Path) -> None:
    index = CodeIndex(package_repo, db=":memory:")

    def mention(query: str, path: str) -> float:
        hits = {h.path: h for h in index.rank_files(query, k=10)}
        return hits[path].signals["mention"] if path in hits else 0.0

    # The module, named as a module: a sure mention.
    assert mention("w = sky.wcs.wcs.WCS()", "sky/wcs/wcs.py") == 0.9
    # `sky.wcs.WCS` names a class of the package, not the module wcs.py.
    assert mention("w = sky.wcs.WCS()", "sky/wcs/wcs.py") == 0.0
    # A package's dotted name names a folder of modules as much as its __init__.py.
    assert 0 < mention("import sky.wcs", "sky/wcs/__init__.py") < 0.9


def test_an_issue_templates_hidden_comments_are_not_the_issue(package_repo: Path) -> None:
    index = CodeIndex(package_repo, db=":memory:")
    template = "<!-- Please cut the issue down and check sky/wcs/wcs.py first -->\n"
    issue = "Projection fails"
    assert [h.path for h in index.rank_files(template + issue, k=3)] == [
        h.path for h in index.rank_files(issue, k=3)
    ]
    # An unclosed comment runs to the end, as a browser shows it.
    assert index.rank_files(issue + "\n<!-- cut the wcs", k=3) == index.rank_files(issue, k=3)


def test_an_environment_listing_is_not_the_issue(tmp_path: Path) -> None:
    (tmp_path / "marks.py").write_text("def xfail(reason):\n    '''Expect a failure.'''\n")
    (tmp_path / "packaging.py").write_text("def attrs_version(pluggy):\n    return pluggy\n")
    (tmp_path / "numpy_compat.py").write_text("def numpy_version():\n    return 'numpy'\n")
    index = CodeIndex(tmp_path, db=":memory:")
    issue = "xfail marker ignored since the upgrade"
    listing = (
        "\n```\nPackage    Version\n---------- -------\nattrs      19.3.0\r\n"
        "packaging  20.4\npluggy==0.13.1,py==1.8.0\nnumpy: 1.24.2\n```\n"
    )
    assert [h.path for h in index.rank_files(issue + listing)] == ["marks.py"]
    # Versions in a sentence are the issue's words.
    said = "xfail ignored by packaging 20.4"
    assert "packaging.py" in [h.path for h in index.rank_files(said)]


def test_only_the_tests_that_best_match_are_evidence(tmp_path: Path) -> None:
    # Six test files, each testing its own module by name, matching the query less and less.
    (tmp_path / "tests").mkdir()
    for strength, name in enumerate("fedcba", start=1):
        (tmp_path / f"{name}.py").write_text("def run():\n    pass\n")
        body = "".join(f"def test_throttle_{i}():\n    run()\n" for i in range(strength))
        (tmp_path / "tests" / f"test_{name}.py").write_text(body + "x = 1\n" * (20 - strength))
    index = CodeIndex(tmp_path, db=":memory:")
    tested = {h.path: h.signals["tested"] for h in index.rank_files("throttle", k=20)}
    # The five best tests lend their score to the code they test; the sixth is one of many.
    assert all(tested[f"{name}.py"] > 0 for name in "abcde")
    assert tested.get("f.py", 0.0) == 0.0


def test_a_files_symbol_score_is_its_best_unit_and_half_the_next_two(tmp_path: Path) -> None:
    unit = "def {name}():\n    throttle()\n\n\n"
    (tmp_path / "many.py").write_text(
        "".join(unit.format(name=n) for n in ("fa", "fb", "fc", "fd"))
    )
    (tmp_path / "once.py").write_text(unit.format(name="fa"))
    symbol = {
        h.path: h.signals["symbol"]
        for h in CodeIndex(tmp_path, db=":memory:").rank_files("throttle")
    }
    assert symbol["many.py"] == 1.0
    assert symbol["once.py"] == pytest.approx(1 / (1 + 2 * 0.5))


def test_the_first_line_of_a_longer_query_weighs_more(tmp_path: Path) -> None:
    # The title names the eviction; the body, at more length, the logging around it.
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "evict.py").write_text(
        "def evict_stale_entries(cache):\n    return [k for k in cache if cache[k].stale]\n"
    )
    (tmp_path / "pkg" / "log.py").write_text(
        "def log_request(logger, request):\n    logger.info('request %s', request)\n"
    )
    index = CodeIndex(tmp_path, db=":memory:")
    body = "The logger shows the request, the logger logs each request, log after log.\n"
    ranked = index.rank_files("Stale entries are never evicted\n" + body, k=2)
    assert [h.path for h in ranked] == ["pkg/evict.py", "pkg/log.py"]
    # The same words, the title moved to the end: the body's words lead again.
    ranked = index.rank_files(body + "Stale entries are never evicted\n", k=2)
    assert ranked[0].path == "pkg/log.py"


def test_words_and_names_in_any_script_are_whole_terms(tmp_path: Path) -> None:
    # [A-Za-z_] terms cut "Rückerstattung" into "r" (dropped) and "ckerstattung", "Größe" into
    # "gr" and "e", and left Cyrillic or Greek out entirely: a query in the code's own language
    # matched fragments shared by unrelated words, or nothing.
    root = tmp_path / "shop"
    root.mkdir()
    (root / "erstattung.py").write_text(
        "def berechne_rückerstattung(bestellung):\n"
        '    """Berechnet die Rückerstattung einer Bestellung."""\n'
        "    return bestellung.betrag\n",
        encoding="utf-8",
    )
    (root / "groesse.py").write_text(
        "def größe_prüfen(paket):\n"
        '    """Prüft die Größe eines Pakets vor dem Versand."""\n'
        "    return paket.größe < 10\n",
        encoding="utf-8",
    )
    (root / "заказы.py").write_text(
        "def обработать_заказ(заказ):\n"
        '    """Обработать заказ клиента и отправить счёт."""\n'
        "    return заказ\n",
        encoding="utf-8",
    )
    (root / "misc.py").write_text("def ckerstattung_gr(e):\n    return e\n", encoding="utf-8")
    index = CodeIndex(root, db=":memory:")
    assert index.rank_files("Rückerstattung falsch berechnet", k=1)[0].path == "erstattung.py"
    assert index.rank_files("Größe des Pakets", k=1)[0].path == "groesse.py"
    top = index.rank_files("обработать_заказ падает", k=1)[0]
    assert top.path == "заказы.py" and top.signals["definition"] > 0
    names = {s.name for s in index.symbols_of("заказы.py")}
    assert "обработать_заказ" in names
    assert index.search("berechne_rückerstattung", k=1)[0].name == "berechne_rückerstattung"


def test_a_default_index_file_that_cannot_be_made_leaves_the_index_in_memory(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without ``db=``, the index file is a cache the user never chose: a home folder that
    cannot be written (a container's user, a read-only file system) made every search, and
    ``iterative_retrieve(task, root)``, which has no ``db=``, fail with an error asking for a
    path. The index now works in memory and a warning says why and what to do."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache folder would be\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "cache"))
    index = CodeIndex(repo)
    with pytest.warns(UserWarning, match=r"blocker/cache/ctxpack/code/.*kept in memory"):
        assert index.rank_files("session token expires", k=1)[0].path == "web/src/session.ts"
    assert index.db == ":memory:"
    with pytest.warns(UserWarning, match="kept in memory"):
        assert "web/src/session.ts" in iterative_retrieve("session token expires", repo).files


def test_a_damaged_default_index_file_is_named_and_left_alone(repo: Path) -> None:
    first = CodeIndex(repo)
    first.refresh()
    first.close()
    damaged = Path(first.db)
    damaged.write_bytes(b"not a database any more" * 100)
    index = CodeIndex(repo)
    with pytest.warns(UserWarning, match=rf"{damaged.name}.*remove it to rebuild"):
        assert index.rank_files("session token expires", k=1)[0].path == "web/src/session.ts"
    assert damaged.read_bytes() == b"not a database any more" * 100


@pytest.mark.parametrize("end", [b"\r\n", b"\r"])
def test_units_of_a_file_with_windows_or_classic_mac_line_ends(tmp_path: Path, end: bytes) -> None:
    """Units were parsed from the bytes as they are, while ``read()`` and the context read the
    file with universal newlines, as Python does: a unit of a CRLF file kept a ``\\r`` on each
    line, and a file whose lines end in a lone ``\\r`` was one line, so its units all spanned
    line 1 and the context ran its lines together."""
    lines = [b"import os", b"", b"def cr_target():", b"    return 1", b"", b"def other():"]
    (tmp_path / "ends.py").write_bytes(end.join([*lines, b"    return 2", b""]))
    index = CodeIndex(tmp_path, db=":memory:")
    hit = index.search("cr_target", k=1)[0]
    assert (hit.name, hit.start_line, hit.end_line) == ("cr_target", 3, 4)
    assert hit.text == "def cr_target():\n    return 1"
    assert index.read("ends.py").splitlines()[2:4] == hit.text.splitlines()
    assert "def cr_target():\n    return 1\n" in iterative_retrieve("cr_target", index).context


_GUARD_QUERIES = (
    "Crash in fetch_record when the key is missing",
    "decode the JWT claims",
    "something is off in services/audit/audit.go\nthe audit log drops the price with tax",
    "refund payment",
    "KeyError: no record 42 in the table of refunds",
)


def _rankings(index: CodeIndex) -> list[list[dict[str, Any]]]:
    return [[hit.model_dump() for hit in index.rank_files(q, k=20)] for q in _GUARD_QUERIES]


def test_an_index_read_back_from_its_file_ranks_as_one_built_afresh(
    repo: Path, tmp_path: Path
) -> None:
    # A later process reads parses and counted terms from the file instead of analysing the
    # tree again: every hit, score and signal must be what a fresh build gives, before and
    # after a file changes.
    (repo / "api" / "errors.py").write_text(
        "def missing(key):\n    raise KeyError(f'no record {key} in the table of refunds')\n"
    )
    db = tmp_path / "index.sqlite"
    CodeIndex(repo, db=db).refresh()
    loaded = CodeIndex(repo, db=db)
    assert loaded.refresh().parsed == 0
    assert _rankings(loaded) == _rankings(CodeIndex(repo, db=":memory:"))
    target = repo / "api" / "db.py"
    target.write_text(target.read_text() + "\n\ndef refund_payment(order):\n    pass\n")
    assert loaded.refresh().parsed == 1
    again = CodeIndex(repo, db=db)
    assert again.refresh().parsed == 0
    fresh = _rankings(CodeIndex(repo, db=":memory:"))
    assert _rankings(loaded) == fresh
    assert _rankings(again) == fresh
    assert fresh[3][0]["path"] == "api/db.py"
    assert any(hit["signals"]["message"] > 0 for hit in fresh[4])


def test_a_row_whose_terms_cannot_be_read_is_parsed_again(repo: Path, tmp_path: Path) -> None:
    db = tmp_path / "index.sqlite"
    expected = _rankings(CodeIndex(repo, db=db))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE files SET terms = '[[], 3]' WHERE path = 'api/db.py'")
        conn.execute("UPDATE files SET terms = 'not json' WHERE path = 'api/storage.py'")
        conn.execute("UPDATE files SET grams = NULL WHERE path = 'services/audit/audit.go'")
    conn.close()
    index = CodeIndex(repo, db=db)
    assert index.refresh().parsed == 3
    assert _rankings(index) == expected


@pytest.mark.parametrize(
    ("counter", "says"),
    [
        (42, "counter must be a TokenCounter, an encoding name or a function, got int"),
        ("gpt-4o", "is a model's name, not an encoding's"),
        (lambda a, b: 0, "counter"),
    ],
    ids=["an int", "a model's name", "a function of two arguments"],
)
def test_a_bad_counter_is_refused_by_the_constructor_as_at_first_use(
    tmp_path: Path, counter: Any, says: str
) -> None:
    """Checked where it is given, not at the first search, far from the mistake; the error is
    the one :func:`ctxpack.get_counter` gives for it."""
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    with pytest.raises(ConfigError, match=says) as given:
        CodeIndex(tmp_path, db=":memory:", counter=counter)
    with pytest.raises(ConfigError) as resolved:
        ctxpack.get_counter(None, counter)
    assert str(given.value) == str(resolved.value)


def test_a_counter_given_is_the_index_s(tmp_path: Path) -> None:
    def words(text: str) -> int:
        return len(text.split())

    (tmp_path / "limits.py").write_text('def throttle(request):\n    "Rate limit."\n')
    index = CodeIndex(tmp_path, db=":memory:", counter=words)
    assert index.counter.count("one two three") == 3
    assert [hit.path for hit in index.search("throttle requests", k=1)] == ["limits.py"]
