"""aider's repo map as a file ranker, for benchmarks/code_retrieval.py.

Runs under a Python that has ``aider-chat`` installed (its own virtual environment: aider pins
exact versions of many packages). Reads a JSON request on stdin, ``{"root": ..., "problem": ...,
"files": [...]}``, and prints the files in the order aider's repo map ranks them (PageRank over
the tree-sitter tag graph, personalised by the files and identifiers the problem mentions, as
aider's coder does for a chat message)::

    echo '{"root": "...", "problem": "...", "files": ["a.py"]}' | AIDER_PY aider_repomap.py
"""

from __future__ import annotations

import json
import re
import sys


class _Model:
    """What RepoMap needs of a model: a token count (chars / 4, as aider's own estimate)."""

    def token_count(self, text: str) -> int:
        return len(text) // 4


def main() -> int:
    from aider.io import InputOutput
    from aider.repomap import RepoMap

    request = json.load(sys.stdin)
    root, problem, files = request["root"], request["problem"], request["files"]
    io = InputOutput(pretty=False, yes=True, fancy_input=False)

    class MemoryRepoMap(RepoMap):  # type: ignore[misc,valid-type]
        """Tags kept in memory: aider's own cache would be written into the tree measured."""

        def load_tags_cache(self) -> None:
            self.TAGS_CACHE = {}

    repo_map = MemoryRepoMap(map_tokens=1024, root=root, main_model=_Model(), io=io, verbose=False)
    # As aider's coder: identifiers are the problem's words, a file is mentioned when its path
    # or its name appears.
    words = set(re.split(r"\W+", problem))
    mentioned = {f for f in files if f in problem or f.rsplit("/", 1)[-1] in words}
    absolute = [f"{root}/{f}" for f in files]
    tags = repo_map.get_ranked_tags([], absolute, mentioned, words)
    ranked: list[str] = []
    for tag in tags:
        name = tag[0]
        if name not in ranked:
            ranked.append(name)
    print(json.dumps(ranked))
    return 0


if __name__ == "__main__":
    sys.exit(main())
