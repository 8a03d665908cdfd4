"""Turn plumbing shared by the Python SDK suite (test_events_tools.py, test_permissions.py,
test_file_blocks.py): read a session's event stream up to session.status_idle, and run one
user.message turn with the stream opened before the send (so no event is missed)."""


def until_idle(stream):
    """The events of `stream` up to and including the next session.status_idle."""
    seen = []
    for ev in stream:
        seen.append(ev)
        if ev.type == "session.status_idle":
            break
    return seen


def message_turn(client, session_id, text, **stream_kwargs):
    """Opens the stream, sends one user.message with `text`, returns the events up to idle."""
    stream = client.beta.sessions.events.stream(session_id, **stream_kwargs)
    client.beta.sessions.events.send(
        session_id, events=[{"type": "user.message", "content": [{"type": "text", "text": text}]}]
    )
    with stream:
        return until_idle(stream)
