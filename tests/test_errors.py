"""ctxpack's errors cross process boundaries whole: a worker of a process pool, a celery task
or a spawned child raises one, and the parent gets the same error back, fields included."""

from __future__ import annotations

import pickle

import pytest

from ctxpack.errors import (
    ArtifactNotFoundError,
    BudgetExceededError,
    ConfigError,
    CtxpackError,
    InvalidMessageError,
    SelectionError,
    SessionErasedError,
    StoreConflictError,
    StoreError,
    TokenizerUnavailableError,
    WorkspacePathError,
)

ERRORS = [
    InvalidMessageError("the role is missing", index=3, field="role"),
    BudgetExceededError(required=120, budget=100, pinned_ids=["m-1", "m-2"], tool_tokens=7),
    TokenizerUnavailableError("no tokenizer for 'x'"),
    ConfigError("budget must be an int"),
    ArtifactNotFoundError("a-1", store="sqlite:///s.db session 'u1'"),
    WorkspacePathError("../etc/passwd", root="/repo", detail="outside the root"),
    SelectionError(["file 'a.py' is not in the workspace", "no unit 'f' in 'b.py'"]),
    StoreError("connection refused", url="postgresql://u:***@h/db", operation="open"),
    StoreConflictError(url="sqlite:///s.db", session_id="u1", expected=3, actual=4),
    SessionErasedError(url="sqlite:///s.db", session_id="u1"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_an_error_pickles_with_its_message_and_fields(error: CtxpackError) -> None:
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error)
    assert str(again) == str(error)
    assert again.args == error.args
    assert vars(again) == vars(error)


class TenantStoreError(StoreError):
    """An application's own error, its constructor taking another field by keyword."""

    def __init__(self, detail: str, *, url: str, operation: str, tenant: str) -> None:
        self.tenant = tenant
        super().__init__(detail, url=url, operation=operation)


def test_an_applications_subclass_pickles_with_its_own_fields() -> None:
    error = TenantStoreError("disk full", url="sqlite:///s.db", operation="open", tenant="acme")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is TenantStoreError
    assert (again.tenant, again.url, str(again)) == ("acme", "sqlite:///s.db", str(error))
