"""Secrets never reach the model or the store: redaction in pack(), Session and the retrieve tool.

The secrets come from a generated corpus (tests/secret_corpus.py): random values in each
provider's published format, planted in realistic tool outputs.
"""

from __future__ import annotations

import json
import uuid
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxpack
from ctxpack import ConfigError, Message, Session, pack
from ctxpack.pipeline import Pipeline
from ctxpack.redaction import find_secrets, placeholder, redact
from ctxpack.retrieval import RETRIEVE_TOOL_NAME
from ctxpack.stages import GreedyPacker, SecretRedactor
from ctxpack.store import SQLiteArtifactStore
from ctxpack.testing import check_stage

from .secret_corpus import planted

CORPUS = list(planted(seed=0)) + list(planted(seed=1))


class RecordingStore(SQLiteArtifactStore):
    """An artifact store that remembers every text it was given."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.texts: list[str] = []

    def put(self, text: str, **metadata: Any) -> str:
        self.texts.append(text)
        return super().put(text, **metadata)


def _exchange(i: int, output: str) -> list[dict[str, Any]]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": "Looking.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": output},
    ]


def _history(outputs: list[str]) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": "Why does deploy fail?"}]
    for i, output in enumerate(outputs):
        history += _exchange(i, output)
    return history


def _padded(text: str) -> str:
    # Long enough for the session's filters to shorten it, so that its original is stored.
    passed = [f"tests/test_{i}.py::test_ok PASSED" for i in range(60)]
    return "\n".join([*passed, text, "==== 60 passed in 3.10s ===="])


def _every_text(result: ctxpack.PackResult) -> str:
    parts = [json.dumps(result.to_openai())]
    parts += [m.text for m in result.artifacts.values()]
    parts += [d.reason for d in result.decisions]
    return "\n".join(parts)


@pytest.mark.parametrize(("name", "text", "values"), CORPUS, ids=[c[0] for c in CORPUS])
def test_every_planted_secret_is_found_and_replaced(
    name: str, text: str, values: list[str]
) -> None:
    out = redact(text)
    for value in values:
        assert value not in out.text, name
    assert out.findings
    assert all(placeholder(kind) in out.text for kind in out.kinds)


def test_the_corpus_covers_many_formats() -> None:
    kinds = {kind for _, text, _ in CORPUS for kind in redact(text).kinds}
    assert len(CORPUS) >= 100
    assert {
        "aws-access-token",
        "aws-secret-access-key",
        "github-pat",
        "github-fine-grained-pat",
        "gitlab-pat",
        "openai-api-key",
        "anthropic-api-key",
        "slack-bot-token",
        "stripe-access-token",
        "gcp-api-key",
        "npm-access-token",
        "pypi-upload-token",
        "private-key",
        "jwt",
        "url-credentials",
        "secret-assignment",
        "password-option",
    } <= kinds


def test_no_secret_reaches_render_the_store_or_a_retrieve_answer() -> None:
    store = RecordingStore()
    session = Session(model="gpt-4", store=store)
    session.extend(_history([_padded(text) for _, text, _ in CORPUS]))
    seen = _every_text(session.render())
    seen += "\n".join(m.text for m in session.transcript())
    refs = [ctxpack.store.artifact_id(text) for text in store.texts]
    answers = [session.handle({"artifact": ref}) for ref in refs]
    assert len(store.texts) > len(CORPUS) / 2, "the filters stored originals"
    everything = "\n".join([seen, *store.texts, *answers])
    leaked = [(name, v) for name, _, values in CORPUS for v in values if v in everything]
    assert not leaked


def test_no_secret_reaches_pack_output() -> None:
    outputs = [text for _, text, _ in CORPUS]
    result = pack(_history(outputs), budget=200_000, model="gpt-4")
    everything = _every_text(result)
    leaked = [(name, v) for name, _, values in CORPUS for v in values if v in everything]
    assert not leaked


def test_each_redaction_is_a_decision_naming_the_kind_never_the_value() -> None:
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    result = pack(_history([f"GITHUB_TOKEN={token}"]), budget=10_000, model="gpt-4")
    (decision,) = [d for d in result.decisions if d.action == "redacted"]
    assert decision.stage == "redact"
    assert decision.message_id == result.input_ids[2]
    assert decision.reason == "1 secret replaced: github-pat"
    assert result.messages[-1].text == "GITHUB_TOKEN=[REDACTED github-pat]"


def test_redact_secrets_false_keeps_tool_outputs_as_they_are() -> None:
    token = "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    history = _history([f"//registry.npmjs.org/:_authToken={token}"])
    assert token in pack(history, budget=10_000, redact_secrets=False).messages[-1].text
    session = Session(redact_secrets=False)
    session.extend(history)
    assert token in session.render().messages[-1].text


def test_what_a_user_typed_is_left_as_typed_unless_asked() -> None:
    token = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
    history = [{"role": "user", "content": f"deploy with STRIPE_KEY={token}"}]
    assert pack(history, budget=1_000).messages[0].text.endswith(token)
    session = Session()
    session.extend(history)
    assert session.render().messages[0].text.endswith(token)
    everything = Session(redact_secrets="all")
    everything.extend(history)
    assert everything.render().messages[0].text.endswith("[REDACTED stripe-access-token]")
    redacting_users = ctxpack.default_pipeline().replace(
        "redact", SecretRedactor(roles=("user", "tool"))
    )
    assert token not in pack(history, budget=1_000, pipeline=redacting_users).messages[0].text


def test_secrets_in_tool_call_arguments_are_redacted_when_asked() -> None:
    token = "glpat-" + "Ab3De6Gh9Jk2Mn5Pq8St"
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": f"export T={token}"})},
    }
    session = Session(redact_secrets="all")
    session.extend(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ]
    )
    arguments = session.render().messages[1].tool_calls[0].function.arguments
    assert token not in arguments
    assert json.loads(arguments)["command"] == "export T=[REDACTED gitlab-pat]"


def test_store_secrets_keeps_the_original_in_the_store_but_not_in_answers() -> None:
    token = "xoxb-" + "123456789012-123456789012-" + "AbCdEfGhIjKlMnOpQrStUvWx"
    store = RecordingStore()
    session = Session(store=store, store_secrets=True)
    session.extend(_history([f"SLACK={token}"]))
    assert any(token in text for text in store.texts)
    (decision,) = [d for d in session.render().decisions if d.action == "redacted"]
    raw_ref = decision.reason.rsplit(" ", 1)[-1]
    assert token in store.get(raw_ref)
    assert token not in session.handle({"artifact": raw_ref})
    assert token not in session.retrieve(raw_ref).text


def test_no_part_of_a_stored_original_gives_a_secret_away() -> None:
    # A selection of the original (a key's middle lines, half a token at a page's end) holds
    # no whole secret for the answer's redaction to find, and a regex's match count would
    # spell a secret out one guess at a time: the whole original is redacted first.
    token = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
    body = ["MIIEpAIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu3aozN3tihPmljnnudb9G3HECdnH"] * 4
    key = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *body, "-----END RSA PRIVATE KEY-----"])
    output = f"{'x' * 7_990} GITHUB_TOKEN={token} done\nDB_PASSWORD=Zq8vLp2xRy9!\n{key}"
    session = Session(store=RecordingStore(), store_secrets=True)
    session.extend(_history([output]))
    (decision,) = [d for d in session.render().decisions if d.action == "redacted"]
    raw_ref = decision.reason.rsplit(" ", 1)[-1]
    pages = [session.handle({"artifact": raw_ref, "page": n}) for n in (1, 2)]
    assert token not in "".join(p.split("\n", 1)[1] for p in pages)
    # The key is one placeholder now: its lines are gone from what can be asked for.
    assert body[0] not in session.handle({"artifact": raw_ref, "lines": "3-"})
    assert session.retrieve(raw_ref, lines="3-").text == "[REDACTED private-key]"
    guess = session.handle({"artifact": raw_ref, "regex": "^DB_PASSWORD=Zq8", "context": 0})
    assert "0 matches" in guess


def test_the_redact_step_is_listed_replaceable_and_removable() -> None:
    pipeline = ctxpack.default_pipeline()
    assert pipeline.names[0] == "redact"
    assert isinstance(pipeline["redact"], SecretRedactor)
    token = "AKIA" + "ZQ3MHYJKLMNOPQR7"
    history = _history([f"key {token}"])
    kept = pack(history, budget=10_000, pipeline=pipeline.without("redact"), redact_secrets=False)
    assert token in kept.messages[-1].text


def test_a_custom_pipeline_without_the_step_gets_it_first() -> None:
    token = "AKIA" + "ZQ3MHYJKLMNOPQR7"
    result = pack(
        _history([f"key {token}"]),
        budget=10_000,
        pipeline=Pipeline([GreedyPacker(signal_weights={})]),
    )
    assert token not in result.messages[-1].text
    assert [d.stage for d in result.decisions if d.action == "redacted"] == ["redact"]


def test_redactor_passes_the_stage_conformance_check() -> None:
    check_stage(SecretRedactor())
    check_stage(SecretRedactor(roles=("user", "tool", "assistant")))


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="redact_secrets"):
        pack([{"role": "user", "content": "hi"}], budget=100, redact_secrets="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="redact_secrets"):
        Session(redact_secrets="tools")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="roles"):
        SecretRedactor(roles=("robot",))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="str"):
        find_secrets(b"bytes")  # type: ignore[arg-type]


NOT_SECRETS = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: Jane <jane@example.com>",
    "HEAD is now at 9fceb02 Fix the parser (#1234)",
    f"request_id={uuid.UUID(int=0x1234567890ABCDEF1234567890ABCDEF)} status=200",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  dist.tar.gz",
    "md5 d41d8cd98f00b204e9800998ecf8427e",
    'data = base64.b64decode("SGVsbG8sIFdvcmxkISBUaGlzIGlzIHRlc3QgZGF0YS4=")',
    "integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUR",
    "token = self._next_token()\nkey = cache_key(request)",
    "password = forms.CharField(widget=forms.PasswordInput)",
    "SECRET_KEY = os.environ['SECRET_KEY']",
    "DB_PASSWORD=${DB_PASSWORD}\nAPI_KEY=<your-api-key>",
    "max_tokens: 4096\naccess_level: admin",
    "  --token TOKEN   the API token to use\n  --password-file PATH",
    "# on old systems --password suffers from the same problem",
    "git log --token-count",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_hashes_ids_and_references_survive(text: str) -> None:
    assert find_secrets(text) == ()
    assert redact(text).text == text


def test_a_message_without_secrets_is_the_same_object() -> None:
    msg = Message(role="tool", tool_call_id="c1", content="all 12 tests passed")
    assert ctxpack.redaction.redact_message(msg)[0] is msg


def test_retrieve_tool_name_is_stable() -> None:
    assert RETRIEVE_TOOL_NAME == "retrieve_original"


def test_anthropic_tool_results_are_redacted_everywhere() -> None:
    token = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
    session = Session()
    session.extend(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": f"GH={token}"}],
                    }
                ],
            },
        ]
    )
    result = session.render()
    assert token not in repr(result) + repr(session.transcript())
    assert "[REDACTED github-pat]" in json.dumps(result.to_anthropic())


@settings(max_examples=200, deadline=None)
@given(
    before=st.text(max_size=200),
    after=st.text(max_size=200),
    planted=st.sampled_from(CORPUS),
)
def test_redaction_removes_planted_secrets_between_any_lines_and_is_idempotent(
    before: str, after: str, planted: tuple[str, str, list[str]]
) -> None:
    _, text, values = planted
    out = redact(f"{before}\n{text}\n{after}")
    # Any lines around the planted output: the value never survives, and redacting the result
    # again changes nothing.
    assert not any(value in out.text for value in values)
    assert redact(out.text).text == out.text
    spans = [(f.start, f.end) for f in out.findings]
    assert spans == sorted(spans)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in pairwise(spans))


def test_a_custom_step_named_redact_keeps_its_name() -> None:
    def mine(ctx: Any) -> Any:
        return ctx

    token = "AKIA" + "ZQ3MHYJKLMNOPQR7"
    pipeline = Pipeline([("redact", mine), GreedyPacker(signal_weights={})])
    result = pack(_history([f"key {token}"]), budget=10_000, pipeline=pipeline)
    assert token not in result.messages[-1].text


def test_a_stored_session_never_writes_a_secret_to_its_database(tmp_path: Any) -> None:
    db = tmp_path / "sessions.db"
    session = Session.open("user-1", store=f"sqlite:///{db}", model="gpt-4")
    session.extend(_history([_padded(text) for _, text, _ in CORPUS[:40]]))
    again = Session.open("user-1", store=f"sqlite:///{db}", model="gpt-4")
    assert [m.text for m in again.transcript()] == [m.text for m in session.transcript()]
    session.close()
    again.close()
    raw = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    leaked = [name for name, _, values in CORPUS[:40] for v in values if v.encode() in raw]
    assert not leaked


def test_a_responses_items_secret_is_gone_from_the_raw_item_it_keeps(tmp_path: Any) -> None:
    # from_openai keeps each Responses item as it came (metadata["openai_responses"]) to send
    # it back with its ids: the secret in its output must not ride along, nor reach a store.
    token = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
    items = [
        {"role": "user", "content": "list env"},
        {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": '{"cmd": "env"}'},
        {"type": "function_call_output", "call_id": "c1", "output": f"GITHUB_TOKEN={token}"},
    ]
    packed = ctxpack.pack(items, budget=1_000, model="gpt-4o")
    assert token not in repr(packed.messages)
    assert packed.messages[-1].metadata["openai_responses"]["call_id"] == "c1"
    session = ctxpack.Session.open("a", store=f"sqlite:///{tmp_path / 's.db'}")
    session.extend(items)
    assert token not in repr(session.render().messages)
    assert token not in repr(
        ctxpack.Session.open("a", store=f"sqlite:///{tmp_path / 's.db'}").render().messages
    )


@pytest.mark.parametrize("kind", ["function_call_output", "message"])
def test_a_secret_cut_between_two_parts_of_a_responses_item_is_gone_from_it(
    tmp_path: Any, kind: str
) -> None:
    # The message's parts are joined where a secret crosses them; the item kept as it came
    # (never sent, but stored) was scanned part by part, and kept both halves.
    token = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
    halves = [
        {"type": "input_text", "text": f"token: {token[:10]}"},
        {"type": "input_text", "text": f"{token[10:]} ok"},
    ]
    call = {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": "{}"}
    if kind == "message":
        items = [{"type": "message", "role": "user", "content": halves}]
    else:
        items = [call, {"type": "function_call_output", "call_id": "c1", "output": halves}]
    store = f"sqlite:///{tmp_path / 's.db'}"
    session = ctxpack.Session.open("a", store=store, redact_secrets="all")
    session.extend(items)
    session.close()
    stored = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert token[10:].encode() not in stored
    kept = ctxpack.Session.open("a", store=store).render().messages[-1]
    assert token[10:] not in repr(kept)
    assert kept.metadata["openai_responses"]["type"] == kind


def _server_tool_turn(env: str) -> list[dict[str, Any]]:
    """An Anthropic assistant turn whose tools ran on Anthropic's side: code execution's bash,
    the text editor's view, a web fetch and an MCP server's tool, each printing ``env``."""
    document = {"type": "document", "source": {"type": "text", "media_type": "text/plain"}}
    return [
        {"role": "user", "content": "Why does the deploy fail?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading the settings."},
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "bash_code_execution",
                    "input": {"command": "cat .env"},
                },
                {
                    "type": "bash_code_execution_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": {
                        "type": "bash_code_execution_result",
                        "stdout": env,
                        "stderr": env,
                        "return_code": 0,
                        "content": [],
                    },
                },
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_2",
                    "name": "text_editor_code_execution",
                    "input": {"command": "view", "path": ".env"},
                },
                {
                    "type": "text_editor_code_execution_tool_result",
                    "tool_use_id": "srvtoolu_2",
                    "content": {
                        "type": "text_editor_code_execution_view_result",
                        "file_type": "text",
                        "content": env,
                        "num_lines": 2,
                        "start_line": 1,
                        "total_lines": 2,
                    },
                },
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_3",
                    "name": "web_fetch",
                    "input": {"url": "https://ci.example.com/env"},
                },
                {
                    "type": "web_fetch_tool_result",
                    "tool_use_id": "srvtoolu_3",
                    "content": {
                        "type": "web_fetch_result",
                        "url": "https://ci.example.com/env",
                        "content": {**document, "source": {**document["source"], "data": env}},
                    },
                },
                {
                    "type": "mcp_tool_use",
                    "id": "mcptoolu_1",
                    "name": "read_env",
                    "server_name": "fs",
                    "input": {},
                },
                {
                    "type": "mcp_tool_result",
                    "tool_use_id": "mcptoolu_1",
                    "is_error": False,
                    "content": [{"type": "text", "text": env}],
                },
                {"type": "text", "text": "The token is set."},
            ],
        },
        {"role": "user", "content": "Thanks, go on."},
    ]


def test_the_output_of_a_tool_run_on_the_providers_side_is_redacted() -> None:
    # Code execution, a web fetch, an MCP server's tool: their results come back inside the
    # assistant's turn, not as tool messages, and went to the model, the transcript and the
    # store with every secret they printed.
    token = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
    history = _server_tool_turn(f"GITHUB_TOKEN={token}\nREGION=eu-west-1\n")
    session = Session(model="claude-sonnet-4-5", counter="approx")
    session.extend(history)
    result = session.render()
    seen = json.dumps(result.to_anthropic()) + repr(session.transcript())
    assert token not in seen
    assert seen.count("GITHUB_TOKEN=[REDACTED github-pat]\\nREGION=eu-west-1") == 2 * 5
    (decision,) = [d for d in result.decisions if d.action == "redacted"]
    assert decision.reason == "5 secrets replaced: github-pat"
    packed = pack(ctxpack.from_anthropic(history), budget=50_000, counter="approx")
    assert token not in json.dumps(packed.to_anthropic())
    # What the assistant wrote itself is left as written, as a user's words are.
    said = next(m for m in packed.messages if m.role == "assistant").content
    assert said[0] == {"type": "text", "text": "Reading the settings."}
    assert said[-1]["text"] == "The token is set."


def test_a_providers_tool_call_and_result_keep_their_ids_and_fields() -> None:
    token = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
    clean = _server_tool_turn("REGION=eu-west-1\n")
    dirty = _server_tool_turn(f"REGION=eu-west-1\nT={token}\n")
    packed = pack(ctxpack.from_anthropic(dirty), budget=50_000, counter="approx")
    sent = packed.to_anthropic()["messages"][1]["content"]
    expected = json.loads(
        json.dumps(clean[1]["content"]).replace(
            "REGION=eu-west-1\\n", "REGION=eu-west-1\\nT=[REDACTED github-pat]\\n"
        )
    )
    assert sent == expected


def test_an_image_in_a_providers_tool_result_is_sent_as_it_came() -> None:
    # A screenshot an MCP server's tool took: its base64 data held, by chance, what reads as
    # an AWS key, and was "redacted" (the image broken) where a client tool's was left alone.
    data = "iVBORw0KGgo" + "q7Rw" * 200 + "/AKIAQ3ZR7TYU2WXB4N6M/" + "Zp3x" * 200
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    token = "ghp_" + "R8sVt2Lq9ZxW4mKp7YcN3bHd6FgJ1aEu5TiO"
    said = {"type": "text", "text": f"TOKEN={token}"}
    use = {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "shot", "server_name": "s"}
    result = {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1", "content": [image, said]}
    history = [
        {"role": "user", "content": "Take a screenshot."},
        {"role": "assistant", "content": [{**use, "input": {}}, result]},
        {"role": "user", "content": "Thanks."},
    ]
    session = Session(model="claude-sonnet-4-5", counter="approx")
    session.extend(history)
    sent = session.render().to_anthropic()["messages"][1]["content"][1]["content"]
    assert sent[0] == image
    assert sent[1]["text"] == "TOKEN=[REDACTED github-pat]"


def test_the_output_of_a_tool_openai_ran_is_redacted(tmp_path: Any) -> None:
    # A remote MCP server's output, the code interpreter's logs, file search's passages: the
    # Responses API returns them in the call's own item, inside the assistant's turn.
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    items = [
        {"type": "message", "role": "user", "content": "Check the repository."},
        {
            "type": "mcp_call",
            "id": "mcp_1",
            "server_label": "gh",
            "name": "env",
            "arguments": "{}",
            "output": f"GITHUB_TOKEN={token}\nOK",
            "status": "completed",
        },
        {
            "type": "code_interpreter_call",
            "id": "ci_1",
            "container_id": "cntr_1",
            "code": "print(open('.env').read())",
            "outputs": [{"type": "logs", "logs": f"token {token}"}],
            "status": "completed",
        },
        {
            "type": "file_search_call",
            "id": "fs_1",
            "queries": ["deploy token"],
            "status": "completed",
            "results": [{"file_id": "file_1", "filename": "ops.md", "text": f"use {token}"}],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        },
        {"type": "message", "role": "user", "content": "Next?"},
    ]
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    session = Session.open("s", store=store, model="gpt-4o")
    session.extend(ctxpack.from_openai(items))
    sent = session.render().to_openai(api="responses")
    packed = pack(ctxpack.from_openai(items), budget=5_000).to_openai(api="responses")
    for seen in (json.dumps(sent), json.dumps(packed), repr(session.transcript())):
        assert token not in seen
    assert (tmp_path / "sessions.db").read_bytes().find(token.encode()) == -1
    # What pairs the items and what the model wrote stays as it came.
    by_id = {item.get("id"): item for item in sent if item.get("id")}
    assert by_id["ci_1"]["code"] == "print(open('.env').read())"
    assert by_id["fs_1"]["results"][0]["file_id"] == "file_1"
    assert by_id["mcp_1"]["output"] == "GITHUB_TOKEN=[REDACTED github-pat]\nOK"
