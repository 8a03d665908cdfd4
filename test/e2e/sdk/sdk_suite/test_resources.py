"""Agents, environments and sessions through client.beta.* (create, retrieve, update, list with
filters, versions, archive, delete)."""
from datetime import datetime, timedelta, timezone

import anthropic
import pytest


def test_agents_create_retrieve_update_versions_archive(client, text_model):
    a = client.beta.agents.create(name="py-a", model=text_model, system="v1")
    assert a.id.startswith("agent_") and a.version == 1
    assert client.beta.agents.retrieve(a.id).system == "v1"
    b = client.beta.agents.update(a.id, version=a.version, system="v2")
    assert b.version == 2 and b.system == "v2"
    versions = [v.version for v in client.beta.agents.versions.list(a.id)]
    assert sorted(versions) == [1, 2]
    archived = client.beta.agents.archive(a.id)
    assert archived.archived_at is not None
    listed = [x.id for x in client.beta.agents.list(limit=100)]
    assert a.id not in listed
    with_archived = [x.id for x in client.beta.agents.list(limit=100, include_archived=True)]
    assert a.id in with_archived


def test_agents_list_created_at_filters_are_instants(client, text_model):
    a = client.beta.agents.create(name="py-when", model=text_model)
    # Truncated to whole seconds: an agent created within that second is still included.
    second = a.created_at.replace(microsecond=0)
    ids = [x.id for x in client.beta.agents.list(created_at_gte=second, limit=100)]
    assert a.id in ids
    later = a.created_at + timedelta(hours=1)
    assert a.id not in [x.id for x in client.beta.agents.list(created_at_gte=later, limit=100)]
    assert a.id in [x.id for x in client.beta.agents.list(created_at_lte=later, limit=100)]
    with pytest.raises(anthropic.BadRequestError) as err:
        client.beta.agents.list(extra_query={"created_at[gte]": "notadate"})
    assert "created_at[gte]" in str(err.value)


def test_agents_list_paginates(client, text_model):
    made = {client.beta.agents.create(name=f"py-page-{i}", model=text_model).id for i in range(3)}
    seen = set()
    page = client.beta.agents.list(limit=1)
    pages = 0
    for item in page:  # auto-pagination follows next_page
        seen.add(item.id)
        pages += 1
    assert made <= seen and pages >= 3


def test_environments_lifecycle(client):
    e = client.beta.environments.create(name="py-e", description="first")
    assert e.id.startswith("env_")
    assert client.beta.environments.retrieve(e.id).name == "py-e"
    u = client.beta.environments.update(e.id, description="second")
    assert u.description == "second" and u.name == "py-e"
    assert e.id in [x.id for x in client.beta.environments.list(limit=100)]
    archived = client.beta.environments.archive(e.id)
    assert archived.archived_at is not None
    assert e.id not in [x.id for x in client.beta.environments.list(limit=100)]
    assert e.id in [x.id for x in client.beta.environments.list(limit=100, include_archived=True)]
    gone = client.beta.environments.delete(e.id)
    assert gone.id == e.id
    with pytest.raises(anthropic.NotFoundError):
        client.beta.environments.retrieve(e.id)


def test_sessions_lifecycle_and_filters(client, env, agent):
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id, title="py-s")
    assert s.id.startswith("sesn_") or s.id.startswith("sess_")
    assert client.beta.sessions.retrieve(s.id).title == "py-s"
    u = client.beta.sessions.update(s.id, title="py-s2")
    assert u.title == "py-s2"
    ids = [x.id for x in client.beta.sessions.list(agent_id=agent.id, limit=100)]
    assert ids == [s.id]
    created = s.created_at.replace(microsecond=0)
    assert s.id in [x.id for x in client.beta.sessions.list(created_at_gte=created, limit=100)]
    future = datetime.now(timezone.utc) + timedelta(days=1)
    assert s.id not in [x.id for x in client.beta.sessions.list(created_at_gt=future, limit=100)]
    # Nothing has deployments or memory stores yet: an unknown id filters to nothing.
    assert list(client.beta.sessions.list(deployment_id="dep_none", limit=10)) == []
    assert list(client.beta.sessions.list(memory_store_id="memstore_none", limit=10)) == []
    assert s.id in [x.id for x in client.beta.sessions.list(statuses=["idle"], limit=100)]
    archived = client.beta.sessions.archive(s.id)
    assert archived.archived_at is not None
    deleted = client.beta.sessions.delete(s.id)
    assert deleted.id == s.id
    with pytest.raises(anthropic.NotFoundError):
        client.beta.sessions.retrieve(s.id)
