"""permission_policy through the official Python SDK (workers/src/tools/permissions.ts): an
always_ask built-in tool is held (agent.tool_use with evaluated_permission "ask", the session
idles with requires_action naming it); user.tool_confirmation deny answers it with an is_error
tool result carrying the deny message, the model is called again and the session ends idle;
a confirmation naming no held call is a 400 naming the field."""
import os

import anthropic
import pytest

from turns import message_turn, send_until_idle


def test_always_ask_requires_action_then_deny(client, env):
    agent = client.beta.agents.create(
        name="py-permissions",
        model=os.environ["AGENTFLEET_PERMISSION_MODEL"],
        tools=[
            {
                "type": "agent_toolset_20260401",
                "default_config": {"permission_policy": {"type": "always_ask"}},
            }
        ],
    )
    assert agent.tools[0].default_config.permission_policy.type == "always_ask"
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    seen = message_turn(client, s.id, "go")
    use = next(e for e in seen if e.type == "agent.tool_use")
    assert use.name == "bash" and use.evaluated_permission == "ask"
    assert use.evaluation.type == "always_ask"
    assert not [e for e in seen if e.type == "agent.tool_result"]
    assert seen[-1].stop_reason.type == "requires_action"
    assert seen[-1].stop_reason.event_ids == [use.id]

    with pytest.raises(anthropic.BadRequestError) as bad:
        client.beta.sessions.events.send(
            s.id,
            events=[{"type": "user.tool_confirmation", "tool_use_id": "sevt_nope", "result": "allow"}],
        )
    assert "events[0].tool_use_id" in str(bad.value)

    after = send_until_idle(
        client,
        s.id,
        [
            {
                "type": "user.tool_confirmation",
                "tool_use_id": use.id,
                "result": "deny",
                "deny_message": "not this time",
            }
        ],
    )
    result = next(e for e in after if e.type == "agent.tool_result")
    assert result.tool_use_id == use.id and result.is_error is True
    assert result.content[0].text == "not this time"
    assert after[-1].stop_reason.type == "end_turn"
    confirmation = next(
        e for e in client.beta.sessions.events.list(s.id) if e.type == "user.tool_confirmation"
    )
    assert confirmation.tool_use_id == use.id and confirmation.result == "deny"
    assert client.beta.sessions.retrieve(s.id).status == "idle"
