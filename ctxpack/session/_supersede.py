"""Superseding file views: a view that a later view of the same lines covers is replaced."""

from __future__ import annotations

from .._internal.views import read_failed
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
        # A read that failed (the file gone, a wrong folder) shows nothing of the file: the
        # earlier view is still the latest one that does.
        if region is None or read_failed(self._raw[index].text):
            return
        if not self._shown_whole(index) and index not in self._pending:
            # Shortened, it covers no earlier view (see _shown_whole); a later one may cover it.
            self._views.append((index, region))
            return
        live = []
        # A relative path compares with an absolute one once a `pwd` said where it leads.
        shells = self._shell_folders()
        placed = shells.resolved(region)
        for position, earlier in self._views:
            if placed.covers(shells.resolved(earlier)):
                self._superseded.append((position, index))
            else:
                live.append((position, earlier))
        self._views = [*live, (index, region)]
        waiting = sum(self.counter.count_message(self._compact[p]) for p, _ in self._superseded)
        # Replacing an earlier message makes a prompt cache rewrite everything after it: do it
        # rarely, for enough tokens at once.
        if waiting < self.supersede_batch:  # type: ignore[operator]
            return
        waiting_still = []
        for position, by in self._superseded:
            if position in self._pending or by in self._pending:
                # Still waiting for its filtering, or for the later view's: decided once the
                # agent answers, with the next batch.
                waiting_still.append((position, by))
            elif self._shown_whole(by):
                self._replace_view(position, by)
            else:  # the later view was shortened once answered: the earlier one stays live
                region_then = self._calls[self._raw[position].tool_call_id or ""].region
                if region_then is not None:
                    self._views.append((position, region_then))
        self._superseded = waiting_still

    def _shown_whole(self, index: int) -> bool:
        """Whether the view at ``index`` is sent as it came. A view the filter shortened (a
        long file's head, tail and the goal's windows), one too large to keep or quarantined
        may not show the lines an earlier view was opened for: it supersedes nothing."""
        return self._compact[index] is self._raw[index]

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
