"""Memory stores attached to sessions through the official Python SDK (unchanged): the
memory_store resource as the SDK sends and reads it (access, instructions, the documented
/mnt/memory/<name> mount path, name and description snapshots), the agent's memory_store_id
mounted read_write, the session list filter by memory_store_id, and bad references refused
with a 400 naming resources[i].memory_store_id. The mount itself (files in a real sandbox and
the write-back at idle) is proved by test/e2e/memory/memory-session.test.ts; this platform runs no sandbox.
"""
import anthropic
import pytest

BETA = {"anthropic-beta": "managed-agents-2026-04-01"}


def test_memory_store_resource_round_trip(client, env, agent):
    store = client.beta.memory_stores.create(name="Py Notes", description="notes from python")
    s = client.beta.sessions.create(
        agent=agent.id,
        environment_id=env.id,
        resources=[
            {
                "type": "memory_store",
                "memory_store_id": store.id,
                "access": "read_only",
                "instructions": "check before answering",
            }
        ],
    )
    (r,) = s.resources
    assert r.type == "memory_store"
    assert r.memory_store_id == store.id
    assert r.access == "read_only"
    assert r.instructions == "check before answering"
    assert r.mount_path == "/mnt/memory/py-notes"
    assert r.name == "Py Notes"
    assert r.description == "notes from python"
    assert [x.id for x in client.beta.sessions.list(memory_store_id=store.id, limit=10)] == [s.id]
    # The snapshot keeps the name the store had when attached.
    client.beta.memory_stores.update(store.id, name="Renamed")
    assert client.beta.sessions.retrieve(s.id).resources[0].name == "Py Notes"


def test_agent_memory_store_and_bad_references(client, env, text_model):
    store = client.beta.memory_stores.create(name="agent store")
    a = client.post(
        "/v1/agents",
        body={"name": "py-mem-agent", "model": text_model, "memory_store_id": store.id},
        cast_to=object,
        options={"headers": BETA},
    )
    s = client.beta.sessions.create(agent=a["id"], environment_id=env.id)
    assert [(r.memory_store_id, r.access, r.mount_path) for r in s.resources] == [
        (store.id, "read_write", "/mnt/memory/agent-store")
    ]
    with pytest.raises(anthropic.BadRequestError) as e:
        client.beta.sessions.create(
            agent=a["id"],
            environment_id=env.id,
            resources=[{"type": "memory_store", "memory_store_id": "memstore_nope"}],
        )
    err = e.value.body["error"] if "error" in e.value.body else e.value.body
    assert err["details"]["field"] == "resources[0].memory_store_id"
