"""Tracebacks (Python, and the ``at file:line`` stacks of JavaScript and Java): the exception and
the frames in the project's own files; library frames are counted, not shown."""

from __future__ import annotations

import re

from ._base import Extract, ToolOutput, assemble

__all__ = ["TracebackFilter"]

_START = re.compile(r"^\s*Traceback \(most recent call last\):|^Exception in thread ")
_PY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line \d+')
_JS_FRAME = re.compile(r"^\s+at (?:.+ \()?(?P<path>[^():]+):\d+(?::\d+)?\)?$")
# A JVM frame names its method, not a path: "at com.acme.App.run(App.java:12)", and the
# method's package tells a library frame ("java.base/java.util...") from the project's.
_JAVA_FRAME = re.compile(r"^\s+at (?P<path>[\w$.<>/@-]+)\([^()]*\)$")
_CHAIN = re.compile(
    r"^(During handling of the above exception|The above exception was the direct cause)|"
    r"^Caused by: "
)
_LIBRARY = re.compile(
    r"site-packages|dist-packages|node_modules|^/usr/lib/|/lib/python\d[\d.]*/|^<frozen |"
    r"^internal/|^node:|^java\.|^javax\.|^sun\.|^jdk\."
)
_EXCEPTION = re.compile(r"^[\w.]*(Error|Exception|Exit|Interrupt|Warning|Failure)\b|^\w+(\.\w+)+:")


class TracebackFilter:
    """Tracebacks: the exception line, the chain between exceptions, and the frames in the
    project's files with their code line; library frames are counted in a note. Lines around
    the traceback (a script's own output) are kept at the head and the tail.

    Example:
        >>> from ctxpack.filters import ToolOutput
        >>> tb = ["Traceback (most recent call last):",
        ...       '  File "/app/run.py", line 3, in <module>', "    main()"]
        >>> for n in range(8):
        ...     tb += [f'  File "/usr/lib/python3.11/site-packages/lib/m{n}.py", line {n}, in f',
        ...            "    f()"]
        >>> tb += ["KeyError: 'token'"]
        >>> print(TracebackFilter().extract(ToolOutput("\\n".join(tb))).text)
        Traceback (most recent call last):
          File "/app/run.py", line 3, in <module>
            main()
        [… 16 lines hidden: 4-19]
        KeyError: 'token'
    """

    kind = "traceback"

    def detect(self, output: ToolOutput, /) -> float:
        lines = output.lines
        # One search of the whole text spares most outputs a match per line.
        text = "\n".join(lines)
        if "Traceback (most recent call last):" not in text and "Exception in thread " not in text:
            return 0.0
        return 0.7 if any(_START.match(lines[i]) for i in output.body) else 0.0

    def extract(self, output: ToolOutput, /) -> Extract | None:
        lines = output.lines
        keep: set[int] = set(output.envelope)
        library = 0
        in_trace = False
        message = False  # in the lines of an exception's message (pydantic's are indented)
        first = last = None
        for i in output.body:
            line = lines[i]
            if _START.match(line) or _CHAIN.match(line):
                keep.add(i)
                in_trace, message = True, False
                first = i if first is None else first
                last = i
                continue
            if not in_trace:
                continue
            frame = _PY_FRAME.match(line) or _JS_FRAME.match(line) or _JAVA_FRAME.match(line)
            if frame:
                last, message = i, False
                if _LIBRARY.search(frame["path"]):
                    library += 1
                    continue
                keep.add(i)
                if line.lstrip().startswith('File "') and i + 1 < len(lines):
                    nxt = lines[i + 1]
                    if nxt.startswith("    ") and not _PY_FRAME.match(nxt):
                        keep.add(i + 1)
                continue
            if not message and line.startswith((" ", "\t")) and not _EXCEPTION.match(line.strip()):
                continue  # a library frame's code line, or a caret line
            # The exception, and what follows it up to the next blank line.
            keep.add(i)
            last, message = i, True
            if not line.strip():
                in_trace = False
        if first is None:
            return None
        # Around the traceback: the first and last lines of the output proper.
        body = [i for i in output.body if i < first or (last is not None and i > last)]
        keep.update(body[:10])
        keep.update(body[-10:])
        if len(keep) >= len(lines) - 1:
            return None
        summary = f"{library} library frames hidden" if library else "project frames kept"
        return Extract(assemble(output, keep), summary)
