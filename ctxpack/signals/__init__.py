"""How ctxpack measures what a message has to do with the query: words and their index, related
words, and (opt-in) sentence embeddings."""

__all__: list[str] = []
