"""Retrieval over a codebase: grep, symbol units, an import/call graph, and the retrieval loop.

Three layers, used in that order: lexical (:func:`grep`, ripgrep or a pure-Python scan, with
``.gitignore`` respected), structural (tree-sitter symbol units and the import/call graph) and
ranked retrieval (:class:`CodeIndex`: BM25 over symbol units with code-aware terms, combined
with graph proximity). :func:`iterative_retrieve` runs dispatch, evaluate, refine cycles until
enough files are highly relevant; :func:`decide_loading` says when loading the whole repository
is the better choice.

Example:
    >>> import pathlib, tempfile
    >>> from ctxpack.code import CodeIndex
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (root / "auth.py").write_text("def refresh_token(session):\\n    return session\\n")
    >>> CodeIndex(root, db=":memory:").search("refresh the token", k=1)[0].name
    'refresh_token'
"""

from ._context import build_context as build_context
from ._files import is_binary as is_binary
from ._files import iter_lines as iter_lines
from ._files import list_files as list_files
from ._files import resolve_file as resolve_file
from ._files import resolve_root as resolve_root
from ._files import searchable as searchable
from ._files import walk_files as walk_files
from ._graph import CodeGraph as CodeGraph
from ._grep import Engine as Engine
from ._grep import GrepHit as GrepHit
from ._grep import grep as grep
from ._grep import ripgrep_path as ripgrep_path
from ._index import DEFAULT_WEIGHTS as DEFAULT_WEIGHTS
from ._index import TEST_SHARE as TEST_SHARE
from ._index import CodeIndex as CodeIndex
from ._index import FileHit as FileHit
from ._index import SearchHit as SearchHit
from ._judge import Candidate as Candidate
from ._judge import Judge as Judge
from ._judge import JudgeError as JudgeError
from ._judge import Judgement as Judgement
from ._judge import ModelJudge as ModelJudge
from ._judge import RankingJudge as RankingJudge
from ._judge import band as band
from ._loop import CycleRecord as CycleRecord
from ._loop import RetrievalResult as RetrievalResult
from ._loop import iterative_retrieve as iterative_retrieve
from ._rule import LoadDecision as LoadDecision
from ._rule import decide_loading as decide_loading
from ._rule import is_whole_repository_task as is_whole_repository_task
from ._storage import RefreshStats as RefreshStats
from ._symbols import ParsedFile as ParsedFile
from ._symbols import ParserFallbackWarning as ParserFallbackWarning
from ._symbols import Symbol as Symbol
from ._symbols import parse_source as parse_source
from ._symbols import tree_sitter_available as tree_sitter_available

__all__ = [
    "CodeIndex",
    "JudgeError",
    "Judgement",
    "ModelJudge",
    "RankingJudge",
    "decide_loading",
    "grep",
    "iterative_retrieve",
    "parse_source",
]
