"""MCP servers on agents through the official Python SDK (workers/src/mcpTurn.ts): an agent
with a url MCP server (inline authorization_token) and its mcp_toolset; a turn in which the
model calls mcp__py__echo gets agent.mcp_tool_use (the spec's prefixed name, the SDK's
mcp_server_name) and agent.mcp_tool_result (mcp_tool_use_id, content, is_error) as the SDK
parses them; the bearer appears in no event."""
import os

from turns import message_turn


def test_mcp_tool_called_in_a_turn(client, env):
    token = os.environ["AGENTFLEET_MCP_TOKEN"]
    agent = client.beta.agents.create(
        name="py-mcp",
        model=os.environ["AGENTFLEET_MCP_MODEL"],
        mcp_servers=[
            {
                "type": "url",
                "name": "py",
                "url": os.environ["AGENTFLEET_MCP_URL"],
                "authorization_token": token,
            }
        ],
        tools=[{"type": "mcp_toolset", "mcp_server_name": "py"}],
    )
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    seen = message_turn(client, s.id, "echo please")
    assert not [e for e in seen if e.type == "session.error"]
    use = next(e for e in seen if e.type == "agent.mcp_tool_use")
    assert use.name == "mcp__py__echo" and use.mcp_server_name == "py"
    assert use.input == {"text": "from python"}
    assert use.evaluated_permission == "allow"
    result = next(e for e in seen if e.type == "agent.mcp_tool_result")
    assert result.mcp_tool_use_id == use.id and result.is_error is False
    assert result.content[0].text == "echo: from python"
    assert seen[-1].stop_reason.type == "end_turn"
    listed = list(client.beta.sessions.events.list(s.id))
    assert [e.type for e in listed if e.type.startswith("agent.mcp_")] == [
        "agent.mcp_tool_use",
        "agent.mcp_tool_result",
    ]
    assert token not in repr(listed) and token not in repr(seen)
