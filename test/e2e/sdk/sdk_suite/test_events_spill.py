"""Events over 500 KB spill to the object store (core/src/events/spill.ts); through the
official Python SDK they round-trip whole: the send answer, the live stream and the events list
carry the full content and never the internal `_spilled` reference. Session delete succeeds."""

BIG = "x" * 300_000 + "\u00e9" * 150_000  # 600 KB of UTF-8


def test_large_event_round_trips_whole(client, env, agent):
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    stream = client.beta.sessions.events.stream(s.id)
    sent = client.beta.sessions.events.send(
        s.id, events=[{"type": "user.message", "content": [{"type": "text", "text": BIG}]}]
    )
    assert sent.data[0].content[0].text == BIG
    with stream:
        live = None
        for ev in stream:
            if ev.type == "user.message":
                live = ev
            if ev.type == "session.status_idle":
                break
    assert live is not None and live.content[0].text == BIG
    assert "_spilled" not in live.model_dump_json()

    listed = list(client.beta.sessions.events.list(s.id))
    message = next(e for e in listed if e.type == "user.message")
    assert message.id == sent.data[0].id
    assert message.content[0].text == BIG
    assert all("_spilled" not in e.model_dump_json() for e in listed)

    deleted = client.beta.sessions.delete(s.id)
    assert deleted.id == s.id
