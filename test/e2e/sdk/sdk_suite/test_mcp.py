"""MCP servers on agents through the official Python SDK (workers/src/tools/mcp.ts): an agent
with a url MCP server (inline authorization_token) and its mcp_toolset; a turn in which the
model calls mcp__py__echo gets agent.mcp_tool_use (the spec's prefixed name, the SDK's
mcp_server_name) and agent.mcp_tool_result (mcp_tool_use_id, content, is_error) as the SDK
parses them; the bearer appears in no event. The SDK's reference rule: a server no
mcp_toolset names, or a toolset naming no server, is a 400 naming the field on agent create,
update and session overrides (core/src/agents/agents.ts checkMcpServers)."""
import os

import anthropic
import pytest

from turns import message_turn

SERVER = {"type": "url", "name": "refs", "url": "https://mcp.example.com/mcp"}
TOOLSET = {"type": "mcp_toolset", "mcp_server_name": "refs"}


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


def _field(err):
    return err.value.body["error"]["details"]["field"]


def test_mcp_server_without_toolset_is_refused(client, env, text_model):
    with pytest.raises(anthropic.BadRequestError) as unreferenced:
        client.beta.agents.create(name="py-refs", model=text_model, mcp_servers=[SERVER])
    assert _field(unreferenced) == "mcp_servers[0].name"
    assert unreferenced.value.body["error"]["message"] == (
        "mcp_servers[0].name: MCP server refs is not referenced by an mcp_toolset in tools; "
        "add {type: 'mcp_toolset', mcp_server_name: 'refs'}"
    )
    with pytest.raises(anthropic.BadRequestError) as dangling:
        client.beta.agents.create(name="py-refs", model=text_model, tools=[TOOLSET])
    assert _field(dangling) == "tools[0].mcp_server_name"

    agent = client.beta.agents.create(
        name="py-refs", model=text_model, mcp_servers=[SERVER], tools=[TOOLSET]
    )
    with pytest.raises(anthropic.BadRequestError) as update:
        client.beta.agents.update(agent.id, version=agent.version, tools=[])
    assert _field(update) == "mcp_servers[0].name"
    assert client.beta.agents.retrieve(agent.id).version == agent.version

    with pytest.raises(anthropic.BadRequestError) as override:
        client.beta.sessions.create(
            agent={"type": "agent_with_overrides", "id": agent.id, "mcp_servers": []},
            environment_id=env.id,
        )
    assert _field(override) == "agent.tools[0].mcp_server_name"
