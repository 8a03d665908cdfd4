"""Multiagent coordinator sessions with threads through the official Python SDK (core/src/threads,
workers/src/turn/threads.ts, gateway/src/routes/threads.ts; the TypeScript counterpart is
test/e2e/threads/threads.test.ts):
- a coordinator agent whose roster names one agent by id string and one by {type: 'agent', id}
  is stored resolved ({type: 'agent', id, version} entries); its session serves each roster
  agent's full definition;
- the scripted coordinator (AGENTFLEET_THREADS_COORDINATOR_MODEL) starts both threads with
  start_thread; each thread runs its own agent and model, calls the `write` tool on /workspace
  (a.txt, b.txt) and replies; the coordinator's model is called again until its request holds
  both replies, then answers; one session.status_idle ends the turn;
- two runs: python-sdk.test.ts runs the whole suite with SANDBOX_DRIVER=none, where each write is
  answered with an error result (no sandbox); python-sdk-threads.test.ts runs this file alone on
  a platform with the local sandbox and AGENTFLEET_THREADS_SANDBOX=1, where both writes succeed
  (is_error False) and the coordinator, after both replies, runs `bash cat` of both files and its
  agent.tool_result holds both contents: the threads share the session's sandbox;
- every event listed or streamed parses (pydantic validation) as the SDK type it was built as;
  session.thread_created, agent.thread_message_sent, agent.thread_message_received and
  session.thread_status_idle carry the SDK's fields;
- threads.list (primary first, parent_thread_id None), threads.retrieve, threads.archive
  (idempotent: a second archive keeps archived_at; the primary is a 400), threads.events.list
  (a child's own log, from its task to its session.status_idle) and threads.events.stream of the
  primary thread, opened before a user.message, read up to session.status_idle."""
import os

import anthropic
import pytest
from pydantic import TypeAdapter
from anthropic.types.beta.sessions.beta_managed_agents_session_event import BetaManagedAgentsSessionEvent
from anthropic.types.beta.sessions.beta_managed_agents_stream_session_thread_events import (
    BetaManagedAgentsStreamSessionThreadEvents,
)

from turns import message_turn, until_idle

TOOLSET = [{"type": "agent_toolset_20260401"}]
# python-sdk-threads.test.ts: a platform with a sandbox, the threads' writes land in it.
SANDBOX = os.environ.get("AGENTFLEET_THREADS_SANDBOX") == "1"
LISTED = TypeAdapter(BetaManagedAgentsSessionEvent)
STREAMED = TypeAdapter(BetaManagedAgentsStreamSessionThreadEvents)


def parses_as_its_type(events, adapter):
    """Each event, validated from its wire form, is the SDK class the client built it as."""
    for ev in events:
        assert type(ev).__module__.startswith("anthropic.types."), (ev.type, type(ev))
        again = adapter.validate_python(ev.to_dict(mode="json"))
        assert type(again) is type(ev), (ev.type, type(again), type(ev))
        assert again.type == ev.type


@pytest.fixture(scope="module")
def roster(client):
    a = client.beta.agents.create(
        name="py-writer-a",
        description="writes a.txt",
        model=os.environ["AGENTFLEET_THREADS_WRITER_A_MODEL"],
        system="You are writer A.",
        tools=TOOLSET,
    )
    b = client.beta.agents.create(
        name="py-writer-b", model=os.environ["AGENTFLEET_THREADS_WRITER_B_MODEL"], tools=TOOLSET
    )
    coord = client.beta.agents.create(
        name="py-coordinator",
        model=os.environ["AGENTFLEET_THREADS_COORDINATOR_MODEL"],
        tools=TOOLSET,
        multiagent={"type": "coordinator", "agents": [a.id, {"type": "agent", "id": b.id}]},
    )
    return a, b, coord


def test_coordinator_roster_is_stored_resolved(client, roster):
    a, b, coord = roster
    assert coord.multiagent.type == "coordinator"
    assert [(e.type, e.id, e.version) for e in coord.multiagent.agents] == [
        ("agent", a.id, 1),
        ("agent", b.id, 1),
    ]
    got = client.beta.agents.retrieve(coord.id)
    assert [(e.type, e.id, e.version) for e in got.multiagent.agents] == [
        ("agent", a.id, 1),
        ("agent", b.id, 1),
    ]


def test_threads_run_reply_and_are_served(client, env, roster):
    a, b, coord = roster
    s = client.beta.sessions.create(agent=coord.id, environment_id=env.id)
    m = s.agent.multiagent
    assert m.type == "coordinator"
    assert [(x.type, x.id, x.version, x.name) for x in m.agents] == [
        ("agent", a.id, 1, "py-writer-a"),
        ("agent", b.id, 1, "py-writer-b"),
    ]
    assert m.agents[0].system == "You are writer A." and m.agents[0].description == "writes a.txt"
    assert [t.type for t in m.agents[0].tools] == ["agent_toolset_20260401"]
    assert m.agents[0].model.id == os.environ["AGENTFLEET_THREADS_WRITER_A_MODEL"]

    # The turn: both threads started, both replies delivered, one idle at the end.
    seen = message_turn(client, s.id, "split the work")
    parses_as_its_type(seen, TypeAdapter(anthropic.types.beta.sessions.BetaManagedAgentsStreamSessionEvents))
    primary = list(client.beta.sessions.events.list(s.id, limit=1000))
    parses_as_its_type(primary, LISTED)
    assert [e.id for e in seen if e.type == "session.status_idle"] == [primary[-1].id]
    idles = [e for e in primary if e.type == "session.status_idle"]
    assert len(idles) == 1 and idles[0].stop_reason.type == "end_turn"
    messages = [e.content[0].text for e in primary if e.type == "agent.message"]
    assert messages[-1] == "both threads replied"  # its last request held both replies
    bash = [e for e in primary if e.type == "agent.tool_use" and e.name == "bash"]
    if SANDBOX:
        # After both replies the coordinator read both files: the threads wrote into its sandbox.
        assert len(bash) == 1 and bash[0].input["command"] == "cat /workspace/a.txt /workspace/b.txt"
        replied = max(i for i, e in enumerate(primary) if e.type == "agent.thread_message_received")
        assert primary.index(bash[0]) > replied
        cat = next(e for e in primary if e.type == "agent.tool_result" and e.tool_use_id == bash[0].id)
        assert cat.is_error is False
        assert "alpha" in cat.content[0].text and "beta" in cat.content[0].text
    else:
        assert bash == []  # the coordinator reads nothing back: there is no sandbox

    created = [e for e in primary if e.type == "session.thread_created"]
    assert sorted(e.agent_name for e in created) == ["py-writer-a", "py-writer-b"]
    assert all(e.session_thread_id.startswith("sthr_") for e in created)
    ids = {e.agent_name: e.session_thread_id for e in created}
    sent = [e for e in primary if e.type == "agent.thread_message_sent"]
    assert [(e.to_session_thread_id, e.to_agent_name, e.content[0].text) for e in sent] == [
        (ids["py-writer-a"], "py-writer-a", "write a"),
        (ids["py-writer-b"], "py-writer-b", "write b"),
    ]
    received = [e for e in primary if e.type == "agent.thread_message_received"]
    assert sorted((e.from_session_thread_id, e.from_agent_name, e.content[0].text) for e in received) == sorted(
        [
            (ids["py-writer-a"], "py-writer-a", "A wrote a.txt"),
            (ids["py-writer-b"], "py-writer-b", "B wrote b.txt"),
        ]
    )
    thread_idle = [e for e in primary if e.type == "session.thread_status_idle"]
    assert sorted(e.session_thread_id for e in thread_idle) == sorted(ids.values())
    assert [e.stop_reason.type for e in thread_idle] == ["end_turn", "end_turn"]
    assert len([e for e in primary if e.type == "session.thread_status_running"]) == 2
    for r in received:  # each reply is announced idle right before it is delivered
        before = primary[primary.index(r) - 1]
        assert before.type == "session.thread_status_idle"
        assert before.session_thread_id == r.from_session_thread_id

    # threads.list: the primary first, then the children.
    threads = list(client.beta.sessions.threads.list(s.id))
    assert len(threads) == 3
    p, *children = threads
    assert isinstance(p, anthropic.types.beta.sessions.BetaManagedAgentsSessionThread)
    assert p.parent_thread_id is None and p.agent.id == coord.id and p.session_id == s.id
    for c in children:
        assert c.type == "session_thread" and c.session_id == s.id
        assert c.parent_thread_id == p.id and c.status == "idle"
        assert c.archived_at is None and c.workflow_run_id is None
        assert c.usage.output_tokens > 0
    assert sorted(c.agent.name for c in children) == ["py-writer-a", "py-writer-b"]
    assert sorted(c.id for c in children) == sorted(ids.values())

    # threads.retrieve: the thread's agent is its roster entry in full.
    a_thread = next(c for c in children if c.agent.name == "py-writer-a")
    got = client.beta.sessions.threads.retrieve(a_thread.id, session_id=s.id)
    assert got.id == a_thread.id and got.parent_thread_id == p.id
    assert (got.agent.type, got.agent.id, got.agent.version) == ("agent", a.id, 1)
    assert got.agent.system == "You are writer A."
    prim = client.beta.sessions.threads.retrieve(p.id, session_id=s.id)
    assert prim.parent_thread_id is None and prim.agent.id == coord.id

    # threads.events.list: the child's own log, from its task to its idle.
    own = list(client.beta.sessions.threads.events.list(a_thread.id, session_id=s.id))
    parses_as_its_type(own, LISTED)
    assert own[0].type == "agent.thread_message_received"
    assert own[0].from_session_thread_id == p.id and own[0].content[0].text == "write a"
    assert own[-1].type == "session.status_idle" and own[-1].stop_reason.type == "end_turn"
    use = next(e for e in own if e.type == "agent.tool_use")
    assert use.name == "write" and use.input["file_path"] == "/workspace/a.txt"
    result = next(e for e in own if e.type == "agent.tool_result")
    assert result.tool_use_id == use.id
    if SANDBOX:
        assert result.is_error is False  # written into the session's sandbox
        b_thread = next(c for c in children if c.agent.name == "py-writer-b")
        b_own = list(client.beta.sessions.threads.events.list(b_thread.id, session_id=s.id))
        b_use = next(e for e in b_own if e.type == "agent.tool_use")
        assert b_use.name == "write" and b_use.input["file_path"] == "/workspace/b.txt"
        b_result = next(e for e in b_own if e.type == "agent.tool_result")
        assert b_result.tool_use_id == b_use.id and b_result.is_error is False
    else:
        assert result.is_error is True  # SANDBOX_DRIVER=none: no sandbox to write into
    reply = next(e for e in own if e.type == "agent.thread_message_sent")
    assert reply.to_session_thread_id == p.id and reply.content[0].text == "A wrote a.txt"
    assert not [e for e in own if e.type == "session.thread_created"]
    # The primary thread's log is the session's.
    assert [e.id for e in client.beta.sessions.threads.events.list(p.id, session_id=s.id, limit=1000)] == [
        e.id for e in primary
    ]

    # The primary thread's stream (the SDK's GET …/threads/{id}/stream), opened before the next user.message.
    stream = client.beta.sessions.threads.events.stream(p.id, session_id=s.id)
    client.beta.sessions.events.send(
        s.id, events=[{"type": "user.message", "content": [{"type": "text", "text": "py stream turn"}]}]
    )
    with stream:
        streamed = until_idle(stream)
    parses_as_its_type(streamed, STREAMED)
    types = [e.type for e in streamed]
    assert "user.message" in types and types[-1] == "session.status_idle"
    assert streamed[-1].stop_reason.type == "end_turn"
    assert [e.content[0].text for e in streamed if e.type == "agent.message"] == ["streamed answer"]

    # threads.archive: idempotent on a child; the primary is archived with its session.
    archived = client.beta.sessions.threads.archive(a_thread.id, session_id=s.id)
    assert archived.id == a_thread.id and archived.archived_at is not None
    again = client.beta.sessions.threads.archive(a_thread.id, session_id=s.id)
    assert again.archived_at == archived.archived_at
    assert client.beta.sessions.threads.retrieve(a_thread.id, session_id=s.id).archived_at == archived.archived_at
    with pytest.raises(anthropic.BadRequestError) as bad:
        client.beta.sessions.threads.archive(p.id, session_id=s.id)
    assert bad.value.status_code == 400
    assert client.beta.sessions.threads.retrieve(p.id, session_id=s.id).archived_at is None
