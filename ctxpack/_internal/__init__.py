"""ctxpack's internal machinery: nothing here is public API, and any of it may change.

- ``arguments``: the checks of public functions' arguments (message lists, tokens, tools, flags,
  text and nesting), each raising ctxpack's own error naming the argument.
- ``budgets``: the context window and the prompt's budget a wrapper packs each request under.
- ``cliargs``: the command lines' usage error and argument types (one-line errors, exit status 2).
- ``columns``: per-message facts (flags, ids, role codes) as arrays, memoised across packs.
- ``decisions``: :func:`~ctxpack._internal.decisions.trusted_decision`, a decision built without
  validation, for the stages that record one per message.
- ``encodings``: OpenAI's rank files shipped in a package, hash-checked, loaded into tiktoken.
- ``jsontext``: JSON a model wrote, read with one error (``ValueError``) for all that cannot be
  read: malformed, too deep, integers past Python's digit limit.
- ``options``: an invalid option of a stage or a signal as a :class:`~ctxpack.ConfigError`.
- ``prefix``: :class:`~ctxpack._internal.prefix.PrefixMemo`, reuse of per-message values for the
  prefix a history shares with an earlier call.
- ``tool_schemas``: tool definitions rendered as providers put them in the prompt, for counting.
- ``trusted``: building pydantic instances from values already validated.
- ``views``: which file region a shell command shows, for superseding earlier file views.
"""
