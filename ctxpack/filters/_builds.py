"""Install and build logs (pip, npm/yarn/pnpm, cargo, make, cmake, maven, gradle, go, apt): the
outcome, the errors and the warnings; progress, downloads and per-file chatter are counted."""

from __future__ import annotations

import re
from collections import Counter

from .._internal.arguments import tokens
from ._base import Extract, ToolOutput, assemble

__all__ = ["BuildLogFilter"]

_PROGRAMS = frozenset(
    [
        "pip",
        "pip3",
        "npm",
        "yarn",
        "pnpm",
        "bun",
        "cargo",
        "make",
        "cmake",
        "ninja",
        "mvn",
        "mvnw",
        "gradle",
        "gradlew",
        "apt",
        "apt-get",
        "poetry",
        "uv",
        "conda",
        "mamba",
        "bundle",
        "gem",
        "composer",
        "docker",
        "dotnet",
    ]
)
_NOISE = re.compile(
    r"^\s*(Collecting|Downloading|Using cached|Obtaining|Requirement already satisfied|"
    r"Preparing metadata|Building wheel|Created wheel|Stored in directory|Getting requirements|"
    r"Installing build dependencies|Compiling \S+ v\d|Downloaded \S+ v\d|Fetching|Resolving|"
    r"Progress:|Get:\d|Hit:\d|Unpacking|Setting up|Selecting previously|Preparing to unpack|"
    r"\[INFO\] (Download|Building|---)|\(Reading database|npm (http|timing|sill|verb))|"
    r"[━─=#>.\s]*\d+(\.\d+)?\s?%|\d+(\.\d+)?/\d+(\.\d+)? [kMG]?B"
)
_ERROR = re.compile(
    r"\berror\b|\bERROR\b|\bERR!|\bfatal\b|\bFAILED\b|\bfailed\b|^make(\[\d+\])?: \*\*\*|"
    r"\bException\b|\bcannot\b|\bnot found\b|\bconflict",
    re.IGNORECASE,
)
# What a build, an install or a container's log prints when something it ran crashed: the
# exception (a class name, case kept: -Werror is a flag), the traceback that led there, a
# panic, a signal. "error" alone missed "ZeroDivisionError: division by zero" in `docker logs`
# and pip's "ModuleNotFoundError: No module named 'numpy'" under a setup.py that failed.
_CRASH = re.compile(
    r"\b[A-Z][A-Za-z]*(Error|Exception)\b|^\s*Traceback \(most recent call last\)|"
    r"\bpanicked at\b|^\s*panic: |Segmentation fault|core dumped|undefined reference to|"
    r"^\s*Killed\s*$"
)
# A Python frame in the project's files (a library's is left out), kept with its code line.
_PROJECT_FRAME = re.compile(
    r'^\s*File "(?![^"]*(site-packages|dist-packages|/lib/python\d|<frozen ))[^"]+", line \d+'
)
_WARNING = re.compile(r"\bwarn(ing)?\b|\bWARN\b|\bdeprecated\b", re.IGNORECASE)
_OUTCOME = re.compile(
    r"^(Successfully (installed|built|uninstalled|tagged)|added \d+ packages?|"
    r"removed \d+ packages?|"
    r"up to date|changed \d+ packages?|found \d+ vulnerabilit|\d+ vulnerabilit|"
    r"\s*Finished |BUILD (SUCCESS|SUCCESSFUL|FAILURE|FAILED)|Done in|make: Nothing to be done|"
    r"\[100%\]|Installed \d+ packages?|Resolved \d+ packages?|Audited \d+|Total time:)",
    re.IGNORECASE,
)


class BuildLogFilter:
    """Build and install logs: errors and crashes (an exception, a traceback's frames in the
    project's files, a panic; with the two lines after each), distinct warnings (at
    most ``max_warnings``: those naming a word of the goal first, then the first ones; the
    others counted), outcome lines and the last lines; download and progress chatter is
    counted.

    Example:
        >>> from ctxpack.filters import ToolOutput
        >>> log = [f"Collecting pkg{i}" for i in range(40)] + [
        ...     "Successfully installed pkg0-1.0 pkg1-2.3"]
        >>> pip_log = ToolOutput("\\n".join(log), command="pip install .")
        >>> print(BuildLogFilter().extract(pip_log).text)
        [… 40 lines hidden: 1-40]
        Successfully installed pkg0-1.0 pkg1-2.3
    """

    kind = "build_log"

    def __init__(self, *, max_warnings: int = 40) -> None:
        # An install of an old project prints a deprecation per package: hundreds of distinct
        # lines, which say little more than their count.
        self.max_warnings = tokens(max_warnings, "max_warnings", minimum=0, unit="lines")

    def __repr__(self) -> str:
        return f"BuildLogFilter(max_warnings={self.max_warnings})"

    def detect(self, output: ToolOutput, /) -> float:
        if output.program in _PROGRAMS:
            return 1.0
        body = output.body
        lines = output.lines
        noisy = sum(1 for i in body if lines[i] and _NOISE.match(lines[i]))
        return 0.5 if len(body) >= 10 and noisy >= len(body) // 3 else 0.0

    def extract(self, output: ToolOutput, /) -> Extract | None:
        lines = output.lines
        keep: set[int] = set(output.envelope)
        warnings: Counter[str] = Counter()
        warned: list[int] = []  # the first line of each distinct warning
        errors = noise = 0
        for i in output.body:
            line = lines[i]
            if not line.strip():
                continue
            if _OUTCOME.match(line):
                keep.add(i)
            elif (_ERROR.search(line) or _CRASH.search(line)) and not _NOISE.match(line):
                errors += 1
                keep.update(j for j in (i, i + 1, i + 2) if j < len(lines))
            elif _PROJECT_FRAME.match(line):
                keep.update(j for j in (i, i + 1) if j < len(lines))
            elif _WARNING.search(line):
                warnings[line] += 1
                if warnings[line] == 1:
                    warned.append(i)
            elif _NOISE.match(line):
                noise += 1
        named = {i for i in warned if output.mentions_goal(lines[i])}
        chosen = sorted(named)[: self.max_warnings]
        chosen += [i for i in warned if i not in named][: self.max_warnings - len(chosen)]
        keep.update(chosen)
        keep.update(i for i in output.body[-3:] if not _NOISE.match(lines[i]))
        if len(keep) >= len(lines) - 1:
            return None
        summary = f"{errors} error lines, {len(warnings)} distinct warnings"
        if len(warned) > len(chosen):
            summary += f" ({len(warned) - len(chosen)} of them hidden)"
        if noise:
            summary += f", {noise} progress/download lines hidden"
        return Extract(assemble(output, keep), summary)
