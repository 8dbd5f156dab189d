"""The long-session benchmark's bookkeeping on a small shipped session: the split, the chains,
requests over the window, instructions kept, and the report files. Its figures are not tested
(benchmarks measure); the rules that make them are."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

import ctxpack
from ctxpack import get_counter

from .helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "agent_session.json"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script(ROOT / "benchmarks" / "long_sessions.py", "long_sessions_benchmark")


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    raw = json.loads(FIXTURE.read_text("utf-8"))
    for k in range(10):
        (folder / f"s{k}.json").write_text(json.dumps({**raw, "id": f"session-{k}"}), "utf-8")
    return folder


def test_the_split_is_a_stable_function_of_the_id(bench: ModuleType) -> None:
    splits = {bench.split_of(f"session-{k}") for k in range(10)}
    assert splits == {"tune", "report"}
    assert bench.split_of("session-3") == bench.split_of("session-3")


def test_chains_keep_one_system_prompt_and_unique_call_ids(bench: ModuleType, data: Path) -> None:
    sessions = bench.A.load_sessions(data)
    (chained, *_) = bench.chain(sessions[:4])
    roles = [m["role"] for m in chained.messages]
    assert roles.count("system") == 1
    assert len(chained.messages) == 1 + 4 * (len(sessions[0].messages) - 1)
    ids = [c["id"] for m in chained.messages for c in m.get("tool_calls") or ()]
    assert len(ids) == len(set(ids))
    answered = {m["tool_call_id"] for m in chained.messages if m["role"] == "tool"}
    assert answered <= set(ids)


def test_a_chained_task_draws_its_evidence_from_its_own_outputs(
    bench: ModuleType, data: Path
) -> None:
    # The same session four times: every term the second copy uses was first seen in the first
    # copy's outputs, but each copy ran on its own, so its evidence is what it saw itself.
    sessions = bench.A.load_sessions(data)
    (chained, *_) = bench.chain(sessions[:4])
    size = len(sessions[0].messages) - 1
    assert chained.task_starts == tuple(1 + k * size for k in range(4))
    alone = bench.A.session_evidence(sessions[0].messages)
    joined = bench.A.session_evidence(chained.messages, chained.task_starts)
    assert sum(map(len, alone.values())) > 0
    for k in range(4):
        for step, items in alone.items():
            again = joined[step + k * size]
            assert [(e.term, e.source) for e in again] == [
                (e.term, e.source + k * size) for e in items
            ]
    # Without the starts, the later copies' evidence would point back into the first copy.
    crossing = bench.A.session_evidence(chained.messages)
    last = max(alone, key=lambda step: len(alone[step]))
    assert any(e.source < 1 + size for e in crossing[last + size])


def test_the_report_counts_requests_over_the_window(
    bench: ModuleType, data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code = bench.main(
        [
            "--data",
            str(data),
            "--out",
            str(out),
            "--windows",
            # At 2,048 the managed session, counting the tools as OpenAI frames them (it
            # renders for the messages' provider), sends a few requests past the room in
            # Claude's count, which adds the tool-use system prompt: see the guide.
            "3072",
            "--strategies",
            "raw,managed",
            "--name",
            "t",
        ]
    )
    assert code == 0
    results = json.loads((out / "t.json").read_text("utf-8"))["results"]
    report = results["report"]["3072"]
    assert report["raw"]["requests_over_window"] > 0
    assert report["managed"]["requests_over_window"] == 0
    assert report["managed"]["instructions_kept"] == 1.0
    assert report["managed"]["evidence_recoverable"] >= report["managed"]["evidence_survival"]
    assert "chained (report)" in results
    text = (out / "t.md").read_text("utf-8")
    assert "## Tool definitions on demand" in text and "| managed |" in text
    # The replies' share of raw's bill, the floor no strategy goes under, is stated per set.
    raw = report["raw"]
    floor = 1 - raw["input_cost_usd_by_billing"][bench.BILLINGS[0]] / raw["cost_usd"]
    assert f"make {100 * floor:.1f}% ({bench.BILLINGS[0]})" in text
    # Where the dollars go: the parts of the bill add up to it.
    managed = report["managed"]
    p = ctxpack.cost.price(bench.BILLINGS[0].partition("@")[0])
    parts = [
        managed["cache_write_tokens"] * p.cache_write_5m,
        managed["cache_read_tokens"] * p.cache_read,
        managed["uncached_input_tokens"] * p.input,
        managed["output_tokens"] * p.output,
    ]
    assert sum(parts) / 1e6 == pytest.approx(managed["cost_usd"])
    row = f"| managed | ${parts[0] / 1e6:.2f} ({managed['cache_write_tokens']:,}) |"
    assert "Where the dollars go" in text and row in text
    # Per session, the figures add up to the totals, and the sessions are grouped by length.
    per = managed["per_session"]
    assert set(per) == set(report["raw"]["per_session"]) == set(report["raw"]["sessions"])
    assert sum(r["cost_usd"] for r in per.values()) == pytest.approx(managed["cost_usd"])
    assert max(r["peak_request_tokens"] for r in per.values()) == managed["peak_request_tokens"]
    assert "By length" in text and "| raw peak / room | sessions | raw $ | managed |" in text
    again = tmp_path / "again"
    args = ["--data", str(data), "--out", str(again), "--windows", "3072", "--name", "t"]
    assert bench.main([*args, "--render", str(out / "t.json")]) == 0
    assert (again / "t.md").read_text("utf-8") == text


def test_instructions_kept_notices_a_dropped_task(bench: ModuleType, data: Path) -> None:
    session = bench.A.load_sessions(data)[0]
    counter = get_counter(counter="cl100k_base")
    billings = [bench.A.Billing.parse(b) for b in bench.BILLINGS]

    def drop_task(info: object) -> object:
        return lambda history: [m for m in history if m["role"] != "user"]

    run = bench.A.replay(session, "drop", drop_task, counter, billings)
    kept, total = bench.instructions_kept(session, run)
    assert total > 0 and kept == 0


def test_rooms_add_a_managed_row_each_and_a_frontier_plot(
    bench: ModuleType, data: Path, tmp_path: Path
) -> None:
    assert bench.parse_rooms("1000, none") == [1000, None]
    out = tmp_path / "out"
    args = ["--data", str(data), "--out", str(out), "--windows", "4096", "--sets", "single"]
    assert bench.main([*args, "--strategies", "raw,managed", "--rooms", "1000,none"]) == 0
    report = json.loads((out / "long_sessions.json").read_text("utf-8"))["results"]["report"]
    names = list(report["4096"])
    assert names == ["raw", "managed", "managed, room 1,000", "managed, whole room"]
    smaller = report["4096"]["managed, room 1,000"]
    assert smaller["requests_over_window"] == 0
    assert (
        smaller["mean_request_tokens"]
        < report["4096"]["managed, whole room"]["mean_request_tokens"]
    )
    assert "| managed, room 1,000 |" in (out / "long_sessions.md").read_text("utf-8")
    pytest.importorskip("matplotlib")
    assert (out / "long_sessions_frontier.png").stat().st_size > 0


def test_pins_are_pinned_by_the_managed_mode_and_counted_apart(
    bench: ModuleType, data: Path, tmp_path: Path
) -> None:
    memory = tmp_path / "CLAUDE.md"
    memory.write_text("Run the tests before you commit.\nNever push to main.", "utf-8")
    skill = tmp_path / "deploy.md"
    skill.write_text("Deploy skill: tag, build, push.\n" + "step detail\n" * 3_000, "utf-8")
    out = tmp_path / "out"
    args = ["--data", str(data), "--out", str(out), "--windows", "8192", "--sets", "single"]
    pins = ["--memory", str(memory), "--skill", str(skill)]
    assert bench.main([*args, *pins, "--strategies", "raw,managed,autocompact"]) == 0
    report = json.loads((out / "long_sessions.json").read_text("utf-8"))["results"]["report"]
    managed = report["8192"]["managed"]
    # The skill is cut to its budget, not sent whole: pinned content is no instruction.
    assert managed["pins_kept"] == managed["instructions_kept"] == 1.0
    assert managed["requests_over_window"] == 0 and managed["errors"] == []
    assert report["8192"]["raw"]["pins_kept"] == 1.0
    text = (out / "long_sessions.md").read_text("utf-8")
    assert "Pinned content, in every session right after its task: memory CLAUDE.md" in text
    assert "| pins kept |" in text


def test_pins_kept_notices_a_dropped_pin(bench: ModuleType, data: Path) -> None:
    pin = bench.PinnedText(name="CLAUDE.md", text="Never push to main.", kind="memory")
    [session] = bench.with_pins(bench.A.load_sessions(data)[:1], [pin])
    first = next(i for i, m in enumerate(session.messages) if m["role"] == "user")
    assert session.messages[first + 1] == {"role": "user", "content": pin.text}
    counter = get_counter(counter="cl100k_base")
    billings = [bench.A.Billing.parse(b) for b in bench.BILLINGS]

    def drop_pin(info: object) -> object:
        return lambda history: [m for m in history if m.get("content") != pin.text]

    run = bench.A.replay(session, "drop", drop_pin, counter, billings)
    kept, total = bench.pins_kept(session, run, [pin])
    assert total > 0 and kept == 0
    assert bench.instructions_kept(session, run, [pin])[0] == total


def test_by_length_groups_sessions_by_how_far_they_outgrow_the_room(bench: ModuleType) -> None:
    room = 8_000 - bench.reply_room(8_000)

    def run(cost: float, peak: int, present: int = 9) -> dict[str, float]:
        return {
            "cost_usd": cost,
            "peak_request_tokens": peak,
            "evidence_present": present,
            "evidence_total": 10,
        }

    results = {
        "raw": {
            "per_session": {
                "a": run(1.0, room - 1),
                "b": run(4.0, 3 * room),
                "c": run(4.0, 3 * room),
            }
        },
        "managed": {
            "per_session": {"a": run(1.0, 10), "b": run(1.0, 10, 10), "c": run(2.0, 10, 8)}
        },
    }
    lines = bench.by_length_table(results, 8_000)
    assert "| fits | 1 | 1.00 | 100.0% / 90.00% |" in lines
    assert "| 2-4x | 2 | 8.00 | 37.5% / 90.00% |" in lines
    assert not any(line.startswith(("| 1-2x", "| 4x+")) for line in lines)


def test_chain_length_sets_how_many_sessions_a_chain_joins(
    bench: ModuleType, data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    args = ["--data", str(data), "--out", str(out), "--windows", "2048", "--sets", "chained"]
    assert bench.main([*args, "--strategies", "raw", "--chain-length", "2"]) == 0
    results = json.loads((out / "long_sessions.json").read_text("utf-8"))["results"]
    splits = [bench.split_of(f"session-{k}") for k in range(10)]
    chains = {f"chained ({s})": splits.count(s) // 2 for s in ("tune", "report")}
    sizes = {label: len(r["2048"]["raw"]["sessions"]) for label, r in results.items()}
    assert sizes == {label: n for label, n in chains.items() if n}
    assert "chains of 2 sessions" in (out / "long_sessions.md").read_text("utf-8")
    with pytest.raises(SystemExit):
        bench.main([*args, "--chain-length", "1"])


def test_min_tokens_keeps_only_the_longer_sessions(
    bench: ModuleType, data: Path, tmp_path: Path
) -> None:
    raw = json.loads(FIXTURE.read_text("utf-8"))
    short = {**raw, "id": "session-short", "messages": raw["messages"][:3]}
    (data / "short.json").write_text(json.dumps(short), "utf-8")
    counter = get_counter(counter=bench.A.ENCODING)
    sizes = {s.id: bench.session_tokens(s, counter) for s in bench.A.load_sessions(data)}
    assert sizes["session-short"] < sizes["session-0"]
    out = tmp_path / "out"
    args = ["--data", str(data), "--out", str(out), "--windows", "4096", "--sets", "single"]
    assert bench.main([*args, "--strategies", "raw", "--min-tokens", str(sizes["session-0"])]) == 0
    results = json.loads((out / "long_sessions.json").read_text("utf-8"))["results"]
    measured = {sid for part in results.values() for sid in part["4096"]["raw"]["sessions"]}
    assert measured == set(sizes) - {"session-short"}
    assert f"of {sizes['session-0']:,} tokens or more" in (out / "long_sessions.md").read_text()
    with pytest.raises(SystemExit):
        bench.main([*args, "--min-tokens", str(sizes["session-0"] + 1)])


def test_the_agent_tools_are_one_per_name_its_calls_use(bench: ModuleType, data: Path) -> None:
    session = bench.A.load_sessions(data)[0]
    assert bench.agent_tools(session.messages) == [bench.BASH_TOOL]
    bash = bench.BASH_TOOL["function"]
    assert bash["parameters"]["required"] == ["command"]
    assert list(bash["parameters"]["properties"]) == ["command"]
    # A chained or other dataset with other tools gets a generic definition per name.
    call = {"name": "edit", "arguments": json.dumps({"path": "a.py", "text": "x"})}
    other = [*session.messages, {"role": "assistant", "tool_calls": [{"function": call}]}]
    tools = bench.agent_tools(other)
    assert [t["function"]["name"] for t in tools] == ["bash", "edit"]
    assert list(tools[1]["function"]["parameters"]["properties"]) == ["path", "text"]


def test_every_strategy_sends_the_agent_tools_with_every_request(
    bench: ModuleType, data: Path
) -> None:
    # Sessions that call bash every turn must offer it every time (a provider rejects a request
    # holding tool calls without tools): every strategy pays for it, not the managed mode alone.
    session = bench.A.load_sessions(data)[0]
    counter = get_counter(counter="cl100k_base")
    billings = [bench.A.Billing.parse(b) for b in bench.BILLINGS]
    tools = bench.agent_tools(session.messages)
    window = 4096
    for name, factory in bench.strategies(window).items():
        run = bench.A.replay(session, name, factory, counter, billings, tools)
        before = bench.A.replay(session, name, factory, counter, billings)
        assert all(r.tools and r.tools[: len(tools)] == tools for r in run.requests), name
        own = run.requests[-1].tools[len(tools) :]
        # The sessions (filters, managed) add their retrieve tool after the agent's.
        sessions = ("filters", "managed", "managed-gpt-5")
        assert [t["function"]["name"] for t in own] == (
            ["retrieve_original"] if name in sessions else []
        )
        for billing in bench.BILLINGS:
            # Input tokens, not dollars: a window timed by the cache (managed) edits at other
            # requests once the tools take room, and its cache reads move with them.
            billed, bare = run.bills[billing], before.bills[billing]
            assert billed.input_tokens > bare.input_tokens, (name, billing)
    # The tools are counted as each provider receives them: Claude's bill adds the tool-use
    # system prompt to the raw requests, gpt-5's does not.
    raw = bench.A.replay(session, "raw", bench.A.Raw, counter, billings, tools)
    bare = bench.A.replay(session, "raw", bench.A.Raw, counter, billings)
    first = [
        raw.bills[b].requests[0].input_tokens - bare.bills[b].requests[0].input_tokens
        for b in bench.BILLINGS
    ]
    assert first[0] - first[1] >= ctxpack.tokens.ANTHROPIC_TOOL_PROMPT_TOKENS - 20


def test_the_managed_window_counts_the_agent_tools(
    bench: ModuleType, data: Path, tmp_path: Path
) -> None:
    args = ["--data", str(data), "--windows", "3072", "--sets", "single"]
    args += ["--strategies", "raw,clear,autocompact,managed"]
    reports = {}
    for flag in ([], ["--no-agent-tools"]):
        out = tmp_path / ("old" if flag else "new")
        assert bench.main([*args, "--out", str(out), *flag]) == 0
        reports[bool(flag)] = json.loads((out / "long_sessions.json").read_text("utf-8"))
        text = (out / "long_sessions.md").read_text("utf-8")
        assert ("no agent tool definitions" in text) == bool(flag)
    new, old = (reports[k]["results"]["report"]["3072"] for k in (False, True))
    assert new["managed"]["requests_over_window"] == 0
    for name in ("raw", "clear", "autocompact"):
        assert new[name]["cost_usd"] > old[name]["cost_usd"], name
    # Tools change cost and room, not content: the raw requests hold the same messages.
    assert new["raw"]["evidence_survival"] == old["raw"]["evidence_survival"]


def test_the_bound_shows_no_tool_output_and_costs_least(bench: ModuleType, data: Path) -> None:
    # The bound is what no strategy that shows tool outputs can beat: every output a note from
    # its arrival, so no request rewrites an earlier one's prefix.
    session = bench.A.load_sessions(data)[0]
    counter = get_counter(counter="cl100k_base")
    billings = [bench.A.Billing.parse(b) for b in bench.BILLINGS]
    tools = bench.agent_tools(session.messages)
    factories = bench.strategies(4096)
    assert "bound" in factories
    runs = {
        name: bench.A.replay(session, name, factories[name], counter, billings, tools)
        for name in ("raw", "masking", "bound")
    }
    bound = runs["bound"]
    outputs = [m for r in bound.requests for m in r.messages if m.get("role") == "tool"]
    assert outputs and all(m["content"] == bench.MASK for m in outputs)
    for billing in bench.BILLINGS:
        cost = bound.bills[billing].cost
        assert cost < runs["raw"].bills[billing].cost, billing
        assert cost <= runs["masking"].bills[billing].cost, billing


def test_managed_gpt_5_times_its_edits_by_openai_cache(bench: ModuleType) -> None:
    # As a session naming a gpt-5 model does; "managed" names none and is timed by Claude's.
    info = bench.A.SessionInfo(id="s", counter=get_counter(counter="cl100k_base"))
    factories = bench.strategies(64_000)
    timed, plain = factories["managed-gpt-5"](info), factories["managed"](info)
    assert timed.session.window.model == "gpt-5"
    assert plain.session.window.model is None
    assert timed.session.window.window == plain.session.window.window == 64_000
