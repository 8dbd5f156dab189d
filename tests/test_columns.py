"""Per-message columns: positions_of() finds where wanted ids are, however many are wanted."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ctxpack._internal.columns import positions_of

_IDS = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h", "system", "q"])


@given(ids=st.lists(_IDS, max_size=30), wanted=st.frozensets(_IDS, max_size=8))
def test_positions_of_is_every_position_of_a_wanted_id_in_order(
    ids: list[str], wanted: frozenset[str]
) -> None:
    # Up to four wanted ids take the scan-per-id path, more take the per-message one; ids
    # repeat here, though messages' ids never do, so every occurrence must be found.
    assert positions_of(tuple(ids), wanted) == [i for i, x in enumerate(ids) if x in wanted]


def test_positions_of_on_nothing() -> None:
    assert positions_of((), {"a"}) == []
    assert positions_of(("a", "b"), frozenset()) == []
