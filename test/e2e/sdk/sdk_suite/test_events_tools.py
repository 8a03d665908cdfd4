"""Session events through the SDK: send, stream (with event deltas), list; a custom tool round
trip (agent.custom_tool_use → requires_action → user.custom_tool_result)."""

from turns import message_turn, send_until_idle


def test_send_stream_list_with_deltas(client, env, agent):
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    seen = message_turn(client, s.id, "hi", event_deltas=["agent.message"])
    types = [e.type for e in seen]
    assert "agent.message" in types and "session.status_running" in types
    assert "event_start" in types and "event_delta" in types
    deltas = "".join(e.delta.content.text for e in seen if e.type == "event_delta")
    message = next(e for e in seen if e.type == "agent.message")
    assert deltas == "".join(b.text for b in message.content)
    listed = [e.type for e in client.beta.sessions.events.list(s.id)]
    assert listed[0] == "user.message" and "agent.message" in listed
    assert "event_delta" not in listed


def test_custom_tool_round_trip(client, env, tool_model):
    agent = client.beta.agents.create(
        name="py-tools",
        model=tool_model,
        tools=[
            {
                "type": "custom",
                "name": "lookup",
                "description": "looks things up",
                "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
            }
        ],
    )
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    seen = message_turn(client, s.id, "go")
    use = next(e for e in seen if e.type == "agent.custom_tool_use")
    assert use.name == "lookup" and use.input == {"q": "x"}
    assert seen[-1].stop_reason.type == "requires_action"
    assert seen[-1].stop_reason.event_ids == [use.id]
    after = send_until_idle(
        client,
        s.id,
        [
            {
                "type": "user.custom_tool_result",
                "custom_tool_use_id": use.id,
                "content": [{"type": "text", "text": "42"}],
            }
        ],
    )
    final = [e for e in after if e.type == "agent.message"][-1]
    assert final.content[0].text == "the answer is 42"
    assert after[-1].stop_reason.type == "end_turn"
