"""The filter a Session is given follows the session's options: its markers offer the retrieve
tool exactly when the session offers it."""

from __future__ import annotations

from ctxpack.filters import ToolOutputFilter

from .test_session_supersede import numbered, views


def test_a_filter_given_offers_the_retrieve_tool_only_when_the_session_does() -> None:
    given = ToolOutputFilter()
    for offered in (False, True):
        session = views(
            ("cat -n src/m.py", numbered(1, 2_000)), filters=given, retrieve_tool=offered
        )
        (record,) = session.records
        assert record.shortened
        marker = session.compact()[-1].text.split("\n")[-1]
        assert ("retrieve_original(" in marker) is offered, marker
    assert given.retrievable  # the caller's filter is left as it was
