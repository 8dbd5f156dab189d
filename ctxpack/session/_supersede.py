"""Superseding file views: a view that a later view of the same lines covers is replaced."""

from __future__ import annotations

from ..filters import original_note
from ..pipeline import Decision
from ..store import put_original
from ._records import FilterRecord
from ._state import SessionState


class Superseding(SessionState):
    """Obsolete file views, noted as views arrive and replaced in batches."""

    def _supersede(self, index: int) -> None:
        """Note the file views the view at ``index`` makes obsolete; replace them in a batch."""
        call = self._calls.get(self._raw[index].tool_call_id or "")
        region = call.region if call else None
        if region is None:
            return
        live = []
        for position, earlier in self._views:
            if region.covers(earlier):
                self._superseded.append((position, index))
            else:
                live.append((position, earlier))
        self._views = [*live, (index, region)]
        waiting = sum(self.counter.count_message(self._compact[p]) for p, _ in self._superseded)
        # Replacing an earlier message makes a prompt cache rewrite everything after it: do it
        # rarely, for enough tokens at once.
        if waiting < self.supersede_batch:  # type: ignore[operator]
            return
        for position, by in self._superseded:
            if position in self._pending:
                continue  # still waiting for its filtering: it goes once the agent answers
            self._replace_view(position, by)
        self._superseded = []

    def _replace_view(self, position: int, by: int) -> None:
        """Replace the file view at ``position`` by a note naming the later view at ``by`` and
        its stored original, when the note is shorter."""
        raw, old = self._raw[position], self._compact[position]
        artifact = put_original(self.store, raw.text, message_id=raw.id, kind="file_view")
        region_then = self._calls[raw.tool_call_id or ""].region
        path = region_then.path if region_then else "the file"
        what = f"superseded by a later view of {path} (message {self._raw[by].id})"
        note = original_note(what, artifact, retrievable=self.retrieve_tool)
        new = old.model_copy(update={"content": note})
        before, after = self.counter.count_message(old), self.counter.count_message(new)
        if after >= before:
            return
        self._compact[position] = new
        self._rewrote(position)
        previous = self._records.get(raw.id)
        self._records[raw.id] = FilterRecord(
            raw.id,
            "superseded",
            True,
            artifact,
            previous.tokens_before if previous else before,
            after,
            f"superseded by the view in message {self._raw[by].id}",
            previous.tool if previous else None,
            previous.command if previous else None,
        )
        self._decisions.append(
            Decision(
                stage="supersede",
                action="cleared",
                message_id=raw.id,
                reason=f"a later view of {path} (message {self._raw[by].id}) shows the same "
                f"lines; original stored as {artifact}",
                tokens_before=before,
                tokens_after=after,
            )
        )
