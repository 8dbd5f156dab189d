"""Test files as evidence: what is a test, what it tests, and how rank_files uses that."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxpack.code import TEST_SHARE, CodeIndex, FileHit, roles


@pytest.mark.parametrize(
    ("path", "is_test"),
    [
        ("tests/test_models.py", True),
        ("sympy/core/tests/test_basic.py", True),
        ("testing/python/collect.py", True),
        ("pkg/test/helpers.py", True),
        ("test_requests.py", True),
        ("pkg/models_test.go", True),
        ("web/src/cart.spec.ts", True),
        ("conftest.py", True),
        ("src/_pytest/pytester.py", False),
        ("pkg/testing_utils.py", False),
        ("pkg/contest.py", False),
        ("pkg/models.py", False),
        ("app/CartServiceTest.java", True),
        ("app/CartServiceIT.java", True),
        ("app/TestCartService.java", True),
        ("web/src/__tests__/cart.js", True),
        ("app/Latest.java", False),
        ("app/EDIT.java", False),
        ("app/Testing.java", False),
        ("javapoet/TypeSpec.java", False),
    ],
)
def test_is_test_path(path: str, is_test: bool) -> None:
    assert roles.is_test_path(path) is is_test


def test_a_test_file_points_at_the_module_of_its_name_nearest_first() -> None:
    paths = [
        "pkg/core/models.py",
        "pkg/other/models.py",
        "pkg/core/tests/test_models.py",
        "pkg/core/helpers.py",
        "pkg/core/tests/test_helpers.py",
        "pkg/core/tests/test_nothing.py",
    ]
    imports = {"pkg/core/tests/test_helpers.py": {"pkg/core/models.py", "pkg/core/helpers.py"}}
    links = roles.tested_modules(paths, imports)
    # Two files are named models.py: the one sharing the test's folders is the one tested.
    assert links["pkg/core/tests/test_models.py"] == {"pkg/core/models.py": 1.0}
    # Named by the test: sure; only imported: less sure, shared among the imports.
    helpers = links["pkg/core/tests/test_helpers.py"]
    assert helpers["pkg/core/helpers.py"] == 1.0
    assert 0 < helpers["pkg/core/models.py"] < 1.0
    # A test that names no module and imports nothing points at nothing.
    assert "pkg/core/tests/test_nothing.py" not in links
    # A package is named by its folder.
    assert roles.tested_modules(["pkg/io/__init__.py", "tests/test_io.py"], {}) == {
        "tests/test_io.py": {"pkg/io/__init__.py": 1.0}
    }


def test_test_files_of_other_languages_point_at_the_class_or_module_of_their_name() -> None:
    paths = [
        "src/main/java/shop/CartService.java",
        "src/main/java/shop/Cart.java",
        "src/test/java/shop/CartServiceTest.java",
        "src/test/java/shop/TestCart.java",
        "web/src/basket.js",
        "web/src/__tests__/basket.js",
        "web/src/__tests__/receipt.test.js",
        "web/src/receipt.js",
    ]
    assert roles.tested_modules(paths, {}) == {
        "src/test/java/shop/CartServiceTest.java": {"src/main/java/shop/CartService.java": 1.0},
        "src/test/java/shop/TestCart.java": {"src/main/java/shop/Cart.java": 1.0},
        "web/src/__tests__/basket.js": {"web/src/basket.js": 1.0},
        "web/src/__tests__/receipt.test.js": {"web/src/receipt.js": 1.0},
    }


@pytest.fixture
def tested_repo(tmp_path: Path) -> Path:
    """A module whose words are few, and a test of it that repeats the issue's words."""
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "basket.py").write_text(
        "def total(items):\n    return sum(i.price * i.quantity for i in items)\n"
    )
    (tmp_path / "shop" / "receipt.py").write_text(
        "def receipt_lines(items):\n    return [str(i) for i in items]\n"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_basket.py").write_text(
        "from shop.basket import total\n\n\n"
        "def test_total_with_discount_coupon():\n"
        "    # discount coupon applied twice gives a negative total\n"
        "    coupon = discount_coupon(percent=50)\n"
        "    assert total(apply_discount(coupon, coupon)) >= 0\n"
    )
    return tmp_path


ISSUE = "Applying a discount coupon twice gives a negative total"


def test_a_matching_test_ranks_the_code_it_tests_first(tested_repo: Path) -> None:
    index = CodeIndex(tested_repo, db=":memory:")
    ranked = index.rank_files(ISSUE, k=5)
    paths = [h.path for h in ranked]
    assert paths[0] == "shop/basket.py"
    assert ranked[0].signals["tested"] == 1.0
    # The test is still returned (it is evidence), below the code.
    assert "tests/test_basket.py" in paths
    assert _scaled_as_evidence(index, ranked[paths.index("tests/test_basket.py")])


def _scaled_as_evidence(index: CodeIndex, hit: FileHit) -> bool:
    """Whether a file's lexical score was scaled by TEST_SHARE (the graph signal comes after)."""
    lexical = sum(index.weights[s] * hit.signals[s] for s in ("symbol", "file", "definition"))
    expected = TEST_SHARE * lexical + index.weights["graph"] * hit.signals["graph"]
    return hit.score == pytest.approx(expected)


def test_a_test_the_query_names_is_not_down_ranked(tested_repo: Path) -> None:
    index = CodeIndex(tested_repo, db=":memory:")
    ranked = index.rank_files("tests/test_basket.py: " + ISSUE, k=2)
    assert ranked[0].path == "tests/test_basket.py"


def test_the_same_words_outside_a_test_file_win(tested_repo: Path) -> None:
    # The test's text moved to a file that is not a test: it is an answer again.
    (tested_repo / "tests" / "test_basket.py").rename(tested_repo / "shop" / "basket_checks.py")
    moved = [h.path for h in CodeIndex(tested_repo, db=":memory:").rank_files(ISSUE, k=5)]
    assert moved[0] == "shop/basket_checks.py"


@pytest.mark.parametrize(
    ("paths", "outside"),
    [
        # Beside a package: scripts; inside it, even in a folder without __init__.py: code.
        (
            ["pkg/__init__.py", "pkg/cli/run.py", "setupext.py", "tools/gh.py"],
            {"setupext.py", "tools/gh.py"},
        ),
        # A source folder's own modules are code (src/pytest.py beside src/_pytest/).
        (
            ["src/_pytest/__init__.py", "src/pytest.py", "scripts/release.py"],
            {"scripts/release.py"},
        ),
        # No package but tests: a single-module project keeps its code at the top.
        (["six.py", "tests/__init__.py", "tests/test_six.py"], set()),
        # Not Python: no packages to tell code from scripts by.
        (["main.go", "cmd/tool/main.go"], set()),
    ],
)
def test_outside_packages(paths: list[str], outside: set[str]) -> None:
    assert roles.outside_packages(paths) == outside


def test_an_empty_init_left_out_of_the_listing_still_makes_a_package(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    paths = ["pkg/core.py", "tools/gh.py"]
    assert roles.outside_packages(paths) == set()  # no package seen: nothing to tell apart
    assert roles.outside_packages(paths, tmp_path) == {"tools/gh.py"}


@pytest.mark.parametrize(
    ("path", "is_doc"),
    [
        ("doc/en/conf.py", True),
        ("docs/conf.py", True),
        ("examples/classification/plot_iris.py", True),
        ("galleries/tutorials/intro.py", True),
        ("benchmarks/bench_sparse.py", True),
        ("setup.py", True),
        ("sklearn/datasets/_base.py", False),
        ("src/flask/app.py", False),
        ("pkg/documentation.py", False),
    ],
)
def test_is_doc_path(path: str, is_doc: bool) -> None:
    assert roles.is_doc_path(path) is is_doc


@pytest.mark.parametrize(
    "moved",
    [
        "examples/coupons.py",
        # A module at the top of the tree, outside the package: a script that uses the code.
        "release_checks.py",
    ],
)
def test_an_example_a_doc_or_a_script_is_evidence_like_a_test(
    tested_repo: Path, moved: str
) -> None:
    # An example that repeats the issue's words demonstrates the code: its score is scaled
    # as a test's is.
    (tested_repo / moved).parent.mkdir(exist_ok=True)
    (tested_repo / "tests" / "test_basket.py").rename(tested_repo / moved)
    index = CodeIndex(tested_repo, db=":memory:")
    hits = {h.path: h for h in index.rank_files(ISSUE, k=5)}
    assert _scaled_as_evidence(index, hits[moved])
    # Named by the query, it is what the task is about.
    named = index.rank_files(f"{moved}: " + ISSUE, k=1)
    assert named[0].path == moved
