"""Session create with agent_with_overrides through the official Python SDK: every override
field (model, system, tools, skills, mcp_servers) replaces the agent's value in the session's
agent, the agent itself is unchanged, a turn runs on it, and the merged agent is validated like
agent create (a 400 naming agent.<field>)."""
import anthropic
import pytest


def _tool(name):
    return {
        "type": "custom",
        "name": name,
        "description": f"the {name} tool",
        "input_schema": {"type": "object", "properties": {}},
    }


def _toolset(server):
    """Every MCP server is named by an mcp_toolset (SDK rule); all tools off, so turns never
    connect these example.com servers."""
    return {"type": "mcp_toolset", "mcp_server_name": server, "default_config": {"enabled": False}}


def _names(tools):
    return [getattr(t, "name", None) or f"mcp_toolset:{t.mcp_server_name}" for t in tools]


def _base_agent(client, text_model):
    return client.beta.agents.create(
        name="py-overrides",
        model=text_model,
        system="the agent prompt",
        tools=[_tool("agent_tool"), _toolset("agent-mcp")],
        mcp_servers=[{"type": "url", "name": "agent-mcp", "url": "https://mcp.example.com/sse"}],
    )


def test_agent_with_overrides_applies_every_field(client, env, text_model):
    agent = _base_agent(client, text_model)
    s = client.beta.sessions.create(
        agent={
            "type": "agent_with_overrides",
            "id": agent.id,
            "model": {"id": text_model, "effort": "low"},
            "system": "the override prompt",
            "tools": [_tool("override_tool"), _toolset("override-mcp")],
            "skills": [],
            "mcp_servers": [
                {"type": "url", "name": "override-mcp", "url": "https://other.example.com/mcp"}
            ],
        },
        environment_id=env.id,
    )
    assert s.agent.id == agent.id and s.agent.version == 1
    assert s.agent.model.id == text_model and s.agent.model.effort.type == "low"
    assert s.agent.system == "the override prompt"
    assert _names(s.agent.tools) == ["override_tool", "mcp_toolset:override-mcp"]
    assert s.agent.skills == []
    assert [m.name for m in s.agent.mcp_servers] == ["override-mcp"]

    stream = client.beta.sessions.events.stream(s.id)
    client.beta.sessions.events.send(
        s.id, events=[{"type": "user.message", "content": [{"type": "text", "text": "hi"}]}]
    )
    with stream:
        types = []
        for ev in stream:
            types.append(ev.type)
            if ev.type == "session.status_idle":
                break
    assert "agent.message" in types and "session.error" not in types

    unchanged = client.beta.agents.retrieve(agent.id)
    assert unchanged.system == "the agent prompt"
    assert _names(unchanged.tools) == ["agent_tool", "mcp_toolset:agent-mcp"]
    assert unchanged.skills == []
    assert [m.name for m in unchanged.mcp_servers] == ["agent-mcp"]


def test_agent_with_overrides_keeps_omitted_and_clears(client, env, text_model):
    agent = _base_agent(client, text_model)
    kept = client.beta.sessions.create(
        agent={"type": "agent_with_overrides", "id": agent.id, "system": "only the prompt"},
        environment_id=env.id,
    )
    assert kept.agent.system == "only the prompt"
    assert _names(kept.agent.tools) == ["agent_tool", "mcp_toolset:agent-mcp"]
    assert kept.agent.skills == []
    cleared = client.beta.sessions.create(
        agent={
            "type": "agent_with_overrides",
            "id": agent.id,
            "system": None,
            "tools": [],
            "skills": [],
            "mcp_servers": [],
        },
        environment_id=env.id,
    )
    assert cleared.agent.system is None
    assert cleared.agent.tools == [] and cleared.agent.skills == []
    assert cleared.agent.mcp_servers == []


def test_agent_with_overrides_validated_like_agent_create(client, env, text_model):
    agent = _base_agent(client, text_model)
    with pytest.raises(anthropic.BadRequestError) as dup:
        client.beta.sessions.create(
            agent={
                "type": "agent_with_overrides",
                "id": agent.id,
                "tools": [_tool("twice"), _tool("twice")],
            },
            environment_id=env.id,
        )
    assert dup.value.body["error"]["message"].startswith("agent.tools[1]")
    with pytest.raises(anthropic.BadRequestError) as bad:
        client.beta.sessions.create(
            agent={
                "type": "agent_with_overrides",
                "id": agent.id,
                "mcp_servers": [
                    {"type": "url", "name": "dup", "url": "https://a.example.com"},
                    {"type": "url", "name": "dup", "url": "https://b.example.com"},
                ],
                "tools": [_toolset("dup")],
            },
            environment_id=env.id,
        )
    assert bad.value.body["error"]["details"]["field"] == "agent.mcp_servers[1].name"
    assert "duplicate server name dup" in bad.value.body["error"]["message"]


def test_skill_refs_must_name_existing_skills(client, env, text_model):
    """Skills bind as object refs to existing skills; an unknown id is a 400 naming the ref."""
    import anthropic
    import pytest

    with pytest.raises(anthropic.BadRequestError) as e:
        client.beta.agents.create(
            name="py-skills",
            model=text_model,
            skills=[{"type": "custom", "skill_id": "skill_missing"}],
        )
    assert e.value.body["error"]["details"]["field"].startswith("skills[0]")
    agent = _base_agent(client, text_model)
    with pytest.raises(anthropic.BadRequestError) as e:
        client.beta.sessions.create(
            agent={
                "type": "agent_with_overrides",
                "id": agent.id,
                "skills": [{"type": "custom", "skill_id": "skill_missing"}],
            },
            environment_id=env.id,
        )
    assert e.value.body["error"]["details"]["field"].startswith("agent.skills[0]")
