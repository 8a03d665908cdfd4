"""stdio MCP servers through the official Python SDK on a platform without sandboxes
(SANDBOX_DRIVER=none, as test/e2e/sdk/python-sdk.test.ts starts it): a stdio server, flat or in the older
nested shape, is refused with a 400 naming mcp_servers[i].type on agent create and
agent.mcp_servers[i].type on session create with overrides; url servers are unaffected. The
stdio server run in a real sandbox: core/test/sandbox-mcp-stdio.test.ts."""
import anthropic
import pytest

FLAT = {"type": "stdio", "name": "local", "command": "npx", "args": ["-y", "some-mcp"]}
NESTED = {"type": "stdio", "name": "nested", "stdio": {"command": "uvx", "port": 8931}}
URL = {"type": "url", "name": "web", "url": "https://mcp.example.com/mcp"}


def _toolsets(*servers):
    """One mcp_toolset per server: the SDK rejects a server no toolset names."""
    return [{"type": "mcp_toolset", "mcp_server_name": s["name"]} for s in servers]


def test_stdio_refused_without_sandboxes(client, text_model):
    with pytest.raises(anthropic.BadRequestError) as flat:
        client.beta.agents.create(
            name="py-stdio", model=text_model, mcp_servers=[FLAT], tools=_toolsets(FLAT)
        )
    assert "mcp_servers[0].type" in str(flat.value)
    assert "SANDBOX_DRIVER=none" in str(flat.value)

    with pytest.raises(anthropic.BadRequestError) as nested:
        client.beta.agents.create(
            name="py-stdio",
            model=text_model,
            mcp_servers=[URL, NESTED],
            tools=_toolsets(URL, NESTED),
        )
    assert "mcp_servers[1].type" in str(nested.value)

    agent = client.beta.agents.create(
        name="py-url", model=text_model, mcp_servers=[URL], tools=_toolsets(URL)
    )
    assert [s.name for s in agent.mcp_servers] == ["web"]


def test_stdio_refused_in_session_overrides(client, env, agent):
    with pytest.raises(anthropic.BadRequestError) as e:
        client.beta.sessions.create(
            agent={
                "type": "agent_with_overrides",
                "id": agent.id,
                "mcp_servers": [FLAT],
                "tools": _toolsets(FLAT),
            },
            environment_id=env.id,
        )
    assert "agent.mcp_servers[0].type" in str(e.value)
