"""The checks of :class:`~ctxpack.session.Session`'s options, each naming the option it refuses."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence

from .._internal.arguments import tokens
from ..editing import Compactor, ToolResultClearer
from ..errors import ConfigError
from ..filters import OutputFilter, ToolOutputFilter
from ..managed import WindowPolicy
from ..pipeline import Pipeline, Stage
from ..store import ArtifactStore, same_artifact_store
from ..usage import known_window

__all__: list[str] = []  # Session's option checks: used by session/ only

# The options Session.open passes on to the constructor.
SESSION_OPTIONS = frozenset(
    {
        "counter",
        "filters",
        "retrieve_tool",
        "pipeline",
        "filter_when",
        "supersede_batch",
        "window",
        "tools_on_demand",
        "dedupe_outputs",
        "redact_secrets",
        "store_secrets",
        "flag_injections",
    }
)


def _warn_if_beyond_the_model(
    window: WindowPolicy | None, model: str | None, *, stacklevel: int = 3
) -> None:
    # A warning, not an error: a deployment may have a larger window than the price table says
    # (a long-context beta, a fine-tuned model under the same name).
    known = None if window is None or model is None else known_window(model)
    if window is not None and known is not None and window.window > known:
        warnings.warn(
            f"window={window.window} is larger than the context window of {model!r} "
            f"({known} tokens, in ctxpack's price table): the provider may refuse requests of "
            f"more than {known} tokens. Pass window={known}, or ignore this warning if your "
            f"deployment's window is larger",
            UserWarning,
            stacklevel=stacklevel,
        )


def _window_policy(
    window: int | WindowPolicy | None, pipeline: Stage | None
) -> WindowPolicy | None:
    if window is None:
        return None
    if pipeline is not None:
        raise ConfigError(
            "give a window or a pipeline, not both: a managed session (window=...) runs its own "
            "clearing and compaction"
        )
    if isinstance(window, WindowPolicy):
        return window
    if isinstance(window, bool) or not isinstance(window, int):
        raise ConfigError(
            f"window must be a number of tokens or a WindowPolicy, got {type(window).__name__}"
        )
    # WindowPolicy's own error names it and the window: "WindowPolicy: window=0: ...".
    return WindowPolicy(window=window)


def _pipeline(pipeline: Stage | None, store: ArtifactStore) -> Stage | None:
    """The ``pipeline`` option, checked (see :func:`with_session_store`)."""
    if pipeline is None:
        return None
    if not callable(pipeline):
        raise ConfigError(f"pipeline must be a stage, got {type(pipeline).__name__}")
    with_session_store(pipeline, store)
    return pipeline


def with_session_store(
    stage: Stage, store: ArtifactStore, where: str = "pipeline", name: str | None = None
) -> Stage:
    """``stage`` with each clearer and compactor in it that has no store given the session's
    ``store``: the artifacts its placeholders name are then ones the retrieve tool, and every
    replica, can read (without, they would be in ``result.artifacts`` only). Each is a copy,
    the caller's stage unchanged; it shares the caller's summary memo (``clear_cache()``).

    A stage whose store keeps its artifacts where the session's does (the same object, or an
    :class:`~ctxpack.store.SQLiteArtifactStore` opened on the session's database file) keeps it.

    Raises:
        ConfigError: one has another store of its own, named by its place (``pipeline[1]``).
    """
    if isinstance(stage, Pipeline):
        steps = stage.steps
        given = [
            (step_name, with_session_store(step, store, f"{where}[{i}]", step_name))
            for i, (step_name, step) in enumerate(steps)
        ]
        if all(new is old for (_, new), (_, old) in zip(given, steps, strict=True)):
            return stage
        return Pipeline(given)
    if not isinstance(stage, (ToolResultClearer, Compactor)):
        return stage
    if stage.store is None:
        return stage.model_copy(update={"store": store})
    if not same_artifact_store(stage.store, store):
        kind = type(stage).__name__ if name is None else f"{name!r}, {type(stage).__name__}"
        raise ConfigError(
            f"{where} ({kind}) puts the originals it replaces in a store of its own "
            f"({type(stage.store).__name__}), not in the session's: the retrieve tool, "
            "session.retrieve() and the session's other replicas could not read the artifacts "
            "its placeholders name; leave its store unset (the session gives it its own)"
        )
    return stage


def _supersede_batch(value: int | None) -> int | None:
    return None if value is None else tokens(value, "supersede_batch")


def _tool_filter(
    filters: ToolOutputFilter | Sequence[OutputFilter] | bool | None, retrieve_tool: bool
) -> ToolOutputFilter | None:
    """The filter the ``filters`` option asks for (see :class:`Session`)."""
    if filters is False:
        return None
    if filters is None or filters is True:
        return ToolOutputFilter(retrievable=retrieve_tool)
    if isinstance(filters, ToolOutputFilter):
        if filters.retrievable == retrieve_tool:
            return filters
        # Its markers must say what the model is offered: with retrieve_tool=False, a marker
        # telling it to call retrieve_original had it call a tool it was never given. A copy,
        # so that the caller's filter is left as it is.
        chosen = copy.copy(filters)
        chosen.retrievable = retrieve_tool
        return chosen
    # A string is a Sequence too, but of characters, not filters.
    if isinstance(filters, Sequence) and not isinstance(filters, (str, bytes)):
        return ToolOutputFilter(list(filters), retrievable=retrieve_tool)
    raise ConfigError(
        "filters must be a ToolOutputFilter, a list of output filters, True or False; "
        f"got {type(filters).__name__}"
    )
