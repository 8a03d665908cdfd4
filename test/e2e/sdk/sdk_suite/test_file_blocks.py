"""File-sourced image and document blocks and system.message events through the official
Python SDK: a user.message with an uploaded PNG and text file as `{"type": "file"}` sources,
followed by a system.message, is accepted, logged as sent (the file reference, not the bytes)
and runs a turn to end_turn without a session.error; a deleted or missing file is a 400 naming
events[i].content[j].source.file_id; a system.message that does not follow a user event is a
400 naming events[0].type. What the model receives is asserted in test/e2e/files/file-blocks.test.ts and
test/e2e/events/system-message.test.ts (they can read the scripted model's requests)."""
import base64

import anthropic
import pytest

from turns import until_idle

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def test_file_blocks_and_system_message(client, env, agent):
    img = client.beta.files.upload(file=("dot.png", PNG, "image/png"))
    doc = client.beta.files.upload(file=("notes.txt", b"the notes", "text/plain"))
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    content = [
        {"type": "text", "text": "read these"},
        {"type": "image", "source": {"type": "file", "file_id": img.id}},
        {"type": "document", "source": {"type": "file", "file_id": doc.id}, "title": "Notes"},
    ]
    stream = client.beta.sessions.events.stream(s.id)
    sent = client.beta.sessions.events.send(
        s.id,
        events=[
            {"type": "user.message", "content": content},
            {"type": "system.message", "content": [{"type": "text", "text": "Be brief."}]},
        ],
    )
    assert [e.type for e in sent.data] == ["user.message", "system.message"]
    with stream:
        seen = until_idle(stream)
    types = [e.type for e in seen]
    assert "session.error" not in types and "agent.message" in types
    assert seen[-1].stop_reason.type == "end_turn"
    listed = list(client.beta.sessions.events.list(s.id))
    user = next(e for e in listed if e.type == "user.message")
    assert user.content[1].source.type == "file" and user.content[1].source.file_id == img.id
    assert user.content[2].source.file_id == doc.id and user.content[2].title == "Notes"
    system = next(e for e in listed if e.type == "system.message")
    assert [b.text for b in system.content] == ["Be brief."]


def test_file_blocks_refused_at_send(client, env, agent):
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    gone = client.beta.files.upload(file=("gone.png", PNG, "image/png"))
    client.beta.files.delete(gone.id)
    for file_id in (gone.id, "file_missing"):
        with pytest.raises(anthropic.BadRequestError) as err:
            client.beta.sessions.events.send(
                s.id,
                events=[
                    {
                        "type": "user.message",
                        "content": [{"type": "image", "source": {"type": "file", "file_id": file_id}}],
                    }
                ],
            )
        assert "events[0].content[0].source.file_id" in str(err.value)
    with pytest.raises(anthropic.BadRequestError) as err:
        client.beta.sessions.events.send(
            s.id,
            events=[{"type": "system.message", "content": [{"type": "text", "text": "alone"}]}],
        )
    assert "events[0].type" in str(err.value)
    assert list(client.beta.sessions.events.list(s.id)) == []
