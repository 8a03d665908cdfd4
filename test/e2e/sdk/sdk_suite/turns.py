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


def send_until_idle(client, session_id, events, **stream_kwargs):
    """Opens the stream, sends `events`, returns the session's events up to the next idle."""
    stream = client.beta.sessions.events.stream(session_id, **stream_kwargs)
    client.beta.sessions.events.send(session_id, events=events)
    with stream:
        return until_idle(stream)


def message_turn(client, session_id, text, **stream_kwargs):
    """One user.message turn with `text`: the session's events up to the next idle."""
    message = {"type": "user.message", "content": [{"type": "text", "text": text}]}
    return send_until_idle(client, session_id, [message], **stream_kwargs)
