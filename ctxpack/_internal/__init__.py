"""ctxpack's internal machinery: nothing here is public API, and any of it may change.

- ``columns``: per-message facts (flags, ids, role codes) as arrays, memoised across packs.
- ``prefix``: :class:`~ctxpack._internal.prefix.PrefixMemo`, reuse of per-message values for the
  prefix a history shares with an earlier call.
- ``trusted``: building pydantic instances from values already validated.
- ``views``: which file region a shell command shows, for superseding earlier file views.
"""
