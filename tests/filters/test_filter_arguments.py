"""Every filter's options are checked when it is made: a bad one is a ConfigError naming it,
not a TypeError from deep in the first output it filters (which a session would swallow,
sending every output whole)."""

from __future__ import annotations

import pytest

from ctxpack import ConfigError
from ctxpack.filters import DiffFilter, FileViewFilter, GenericFilter, ListingFilter


@pytest.mark.parametrize(
    ("make", "argument"),
    [
        (lambda: GenericFilter(head="3"), "head"),  # type: ignore[arg-type]
        (lambda: GenericFilter(tail=1.5), "tail"),  # type: ignore[arg-type]
        (lambda: GenericFilter(head=-5), "head"),
        (lambda: GenericFilter(max_lines=None), "max_lines"),  # type: ignore[arg-type]
        (lambda: GenericFilter(odd_lines="no"), "odd_lines"),  # type: ignore[arg-type]
        (lambda: ListingFilter(per_group="2"), "per_group"),  # type: ignore[arg-type]
        (lambda: ListingFilter(per_group=-1), "per_group"),
        (lambda: ListingFilter(max_groups=None), "max_groups"),  # type: ignore[arg-type]
        (lambda: FileViewFilter(max_lines="a"), "max_lines"),  # type: ignore[arg-type]
        (lambda: FileViewFilter(radius=-3), "radius"),
        (lambda: DiffFilter(max_lines=None), "max_lines"),  # type: ignore[arg-type]
        (lambda: DiffFilter(context="2"), "context"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_filter_option_is_refused_by_name(make: object, argument: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{argument} must be"):
        make()  # type: ignore[operator]


def test_zero_is_a_valid_count() -> None:
    assert GenericFilter(head=0, tail=0).head == 0
    assert ListingFilter(per_group=0).per_group == 0
    assert DiffFilter(context=0).context == 0
    assert FileViewFilter(radius=0).radius == 0
