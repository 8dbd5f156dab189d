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

from .context import build_context as build_context
from .files import list_files as list_files
from .graph import CodeGraph as CodeGraph
from .grep import GrepHit as GrepHit
from .grep import grep as grep
from .grep import ripgrep_path as ripgrep_path
from .index import DEFAULT_WEIGHTS as DEFAULT_WEIGHTS
from .index import CodeIndex as CodeIndex
from .index import FileHit as FileHit
from .index import SearchHit as SearchHit
from .judge import Candidate as Candidate
from .judge import Judge as Judge
from .judge import JudgeError as JudgeError
from .judge import Judgement as Judgement
from .judge import ModelJudge as ModelJudge
from .judge import RankingJudge as RankingJudge
from .loop import CycleRecord as CycleRecord
from .loop import RetrievalResult as RetrievalResult
from .loop import iterative_retrieve as iterative_retrieve
from .rule import LoadDecision as LoadDecision
from .rule import decide_loading as decide_loading
from .storage import RefreshStats as RefreshStats
from .symbols import ParsedFile as ParsedFile
from .symbols import ParserFallbackWarning as ParserFallbackWarning
from .symbols import Symbol as Symbol
from .symbols import parse_source as parse_source

__all__ = [
    "DEFAULT_WEIGHTS",
    "Candidate",
    "CodeGraph",
    "CodeIndex",
    "CycleRecord",
    "FileHit",
    "GrepHit",
    "Judge",
    "JudgeError",
    "Judgement",
    "LoadDecision",
    "ModelJudge",
    "ParsedFile",
    "ParserFallbackWarning",
    "RankingJudge",
    "RefreshStats",
    "RetrievalResult",
    "SearchHit",
    "Symbol",
    "build_context",
    "decide_loading",
    "grep",
    "iterative_retrieve",
    "list_files",
    "parse_source",
    "ripgrep_path",
]
