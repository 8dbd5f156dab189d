"""A file view supersedes another of the same file however its path is spelled (``./a.py``,
``pkg/../a.py``, ``/repo/a.py`` once a ``pwd`` said the shell is in ``/repo``), and never one of
another file: a relative path is not compared across a ``cd`` the shell may have kept, nor
with an absolute one while the shell's folder is unknown, nor with a relative path a tool
other than the shell reads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxpack import Session

from .test_session import result
from .test_session_supersede import numbered, superseded

VIEW = numbered(1, 40)  # 40 lines of a file, as `cat -n` prints them

# A call's tool, its arguments, and its output.
Step = tuple[str, dict[str, Any], str]


def shell(command: str, output: str = VIEW) -> Step:
    return "bash", {"command": command}, output


def editor(path: str) -> Step:
    return "str_replace_editor", {"command": "view", "path": path}, VIEW


PWD = shell("pwd", "<returncode>0</returncode>\n<output>\n/repo\n</output>")  # mini-swe-agent's
PLAIN_PWD = shell("pwd", "/repo\n")


def session_of(*steps: Step) -> tuple[Session, list[str]]:
    """A session of these calls and outputs; and the ids of the outputs."""
    session = Session(model="gpt-4o", supersede_batch=1)
    session.append({"role": "user", "content": "Fix the bug in func_12."})
    ids = []
    for k, (tool, arguments, output) in enumerate(steps):
        function = {"name": tool, "arguments": json.dumps(arguments)}
        turn = {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [{"id": f"c{k}", "type": "function", "function": function}],
        }
        session.extend([turn, result(f"c{k}", output)])
        ids.append(session.transcript()[-1].id)
    return session, ids


@pytest.mark.parametrize(
    ("first", "later"),
    [
        (shell("cat ./a.py"), shell("cat a.py")),
        (shell("cat pkg/../a.py"), shell("nl -ba a.py")),
        (shell("cat a.py"), shell("cd pkg && cat ../a.py")),
        (shell("cat ./pkg_a/setup.py"), shell("cd pkg_a && cat setup.py")),
        (editor("/repo/./src/../a.py"), editor("/repo/a.py")),
        (editor("/repo/a.py"), editor("/repo/src/../a.py")),
        (shell("cd /repo && cat a.py"), editor("/repo/a.py")),
        (editor("/repo/a.py"), shell("cat /repo/a.py")),
        (editor("src/a.py"), editor("./src/a.py")),
    ],
)
def test_one_file_by_two_spellings_is_one_file(first: Step, later: Step) -> None:
    session, ids = session_of(first, later)
    assert superseded(session) == [ids[0]]


@pytest.mark.parametrize("pwd", [PWD, PLAIN_PWD])
def test_a_pwd_says_where_relative_paths_lead_in_both_directions(pwd: Step) -> None:
    session, ids = session_of(pwd, shell("cat a.py"), shell("cat /repo/a.py"))
    assert superseded(session) == [ids[1]]
    session, ids = session_of(pwd, shell("cat /repo/a.py"), shell("nl -ba ./a.py"))
    assert superseded(session) == [ids[1]]
    # Said after the relative view was read, in the same stretch of the shell's life.
    session, ids = session_of(shell("cat a.py"), pwd, editor("/repo/a.py"))
    assert superseded(session) == [ids[0]]
    # A view read before the shell moved is of the file where it was.
    session, ids = session_of(pwd, shell("cat a.py"), shell("cd pkg"), shell("cat /repo/a.py"))
    assert superseded(session) == [ids[1]]
    # A cd to where the shell is already leaves it there, whatever the harness.
    session, ids = session_of(pwd, shell("cat a.py"), shell("cd /repo && ls"), shell("cat a.py"))
    assert superseded(session) == [ids[1]]


@pytest.mark.parametrize(
    "steps",
    [
        # The shell's folder unknown: /repo/a.py may be another a.py, either way round.
        [shell("cat a.py"), shell("cat /repo/a.py")],
        [shell("cat /repo/a.py"), shell("cat a.py")],
        [editor("/repo/a.py"), shell("cat a.py")],
        # A shell the harness keeps stays in pkg_a after the cd: the second cat reads
        # pkg_a/setup.py. (A harness that starts each command afresh would read setup.py
        # again: a supersession missed, the lesser harm.)
        [shell("cat setup.py"), shell("cd pkg_a"), shell("cat setup.py")],
        [shell("cat setup.py"), shell("cd pkg_a && ls"), shell("cat setup.py")],
        [shell("cat setup.py"), shell("pushd pkg_a"), shell("cat setup.py")],
        [shell("cat setup.py"), shell("(cd pkg_a; make)"), shell("cat setup.py")],
        # What a pwd said holds until a command that may move the shell elsewhere.
        [PWD, shell("cd pkg && ls"), shell("cat a.py"), shell("cat /repo/a.py")],
        [PWD, shell("cd pkg"), shell("cat a.py"), shell("cat /repo/a.py")],
        [PWD, shell("cat a.py"), shell("cat /other/a.py")],
        # A pwd that printed no one absolute folder says nothing.
        [shell("pwd", "bash: pwd: error\n/repo"), shell("cat a.py"), shell("cat /repo/a.py")],
        [
            shell("pwd", "<returncode>1</returncode>\n<output>\n/repo\n</output>"),
            shell("cat a.py"),
            shell("cat /repo/a.py"),
        ],
        [shell("pwd", "repo"), shell("cat a.py"), shell("cat /repo/a.py")],
        # A text editor's or read tool's relative path is its own, not the shell's folder's.
        [editor("a.py"), shell("cat a.py")],
        [shell("cat a.py"), editor("a.py")],
        [PWD, editor("a.py"), shell("cat /repo/a.py")],
    ],
)
def test_a_view_of_a_file_that_may_be_another_supersedes_nothing(steps: list[Step]) -> None:
    session, _ = session_of(*steps)
    assert superseded(session) == []


def test_the_shells_folder_is_stored_with_the_session(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    writer = Session.open("s1", store=url, supersede_batch=1, model="gpt-4o")
    reader = Session.open("s1", store=url, supersede_batch=1, model="gpt-4o")
    steps = [PWD, shell("cat a.py"), shell("cd pkg"), shell("cat a.py")]
    for k, (tool, arguments, output) in enumerate(steps):
        function = {"name": tool, "arguments": json.dumps(arguments)}
        turn = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": function}]}  # fmt: skip
        writer.extend([turn, result(f"c{k}", output)])
    # The reader, which read the writer's appends, goes on: /repo/a.py is the first a.py.
    reader.extend([
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c9", "type": "function",
         "function": {"name": "bash", "arguments": '{"command": "cat /repo/a.py"}'}}]},
        result("c9", VIEW),
    ])  # fmt: skip
    transcript = reader.transcript()
    first, last = transcript[3].id, transcript[-1].id
    for session in (reader, writer):
        assert [(r.message_id, r.reason) for r in session.records if r.kind == "superseded"] == [
            (first, f"superseded by the view in message {last}")
        ]


def test_replicas_on_the_release_before_are_told_to_upgrade_once_a_view_names_its_stretch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A view's stretch of the shell's life is a sixth field the releases reading store format
    # 3 cannot read: they called such a session damaged (FileRegion took 4 to 5 fields).
    from ctxpack import persistence
    from ctxpack.errors import StoreError
    from ctxpack.store import MemoryStore

    store = MemoryStore()

    def stored_format(session_id: str) -> int:
        return int(json.loads(store.load(session_id).state or "")["format"])

    def play(session_id: str, steps: list[Step]) -> None:
        session = Session.open(session_id, store=store, supersede_batch=1, model="gpt-4o")
        for k, (tool, arguments, output) in enumerate(steps):
            function = {"name": tool, "arguments": json.dumps(arguments)}
            turn = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{k}", "type": "function", "function": function}]}  # fmt: skip
            session.extend([turn, result(f"c{k}", output)])

    play("fresh", [shell("cat a.py"), shell("cat ./a.py")])
    play("moved", [shell("cat a.py"), shell("cd pkg"), shell("cat a.py")])
    assert (stored_format("fresh"), stored_format("moved")) == (2, 4)
    monkeypatch.setattr(persistence, "FORMAT", 3)
    with pytest.raises(StoreError, match=r"newer ctxpack \(format 4"):
        Session.open("moved", store=store, supersede_batch=1, model="gpt-4o")
    Session.open("fresh", store=store, supersede_batch=1, model="gpt-4o").render()
