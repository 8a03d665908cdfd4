"""Dreams through the official Python SDK (client.beta.dreams; the SDK sends the
dreaming-2026-04-21 beta header itself): create over a memory store and a session, retrieve
until done, the new store holds the model's reorganised memories and the input store is
unchanged; list with statuses, archive. The model named in AGENTFLEET_DREAM_MODEL is scripted by
test/e2e/sdk/python-sdk.test.ts to answer {"memories": [{"path": "/city.md", "content": "Lisbon"}]}.
"""
import os
import time
import uuid


def _memories(client, store_id):
    return [
        (m.path, m.content)
        for m in client.beta.memory_stores.memories.list(store_id, view="full")
        if m.type == "memory"
    ]


def test_dream_create_and_retrieve_until_done(client, env, agent):
    model = os.environ["AGENTFLEET_DREAM_MODEL"]
    session = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    store = client.beta.memory_stores.create(name=f"py-dream-{uuid.uuid4().hex[:8]}")
    client.beta.memory_stores.memories.create(store.id, path="/city.md", content="Berlin")
    client.beta.memory_stores.memories.create(store.id, path="/home.md", content="Berlin too")
    dream = client.beta.dreams.create(
        inputs=[
            {"type": "memory_store", "memory_store_id": store.id},
            {"type": "sessions", "session_ids": [session.id]},
        ],
        model=model,
        instructions="Merge duplicates.",
    )
    assert dream.type == "dream"
    assert dream.id.startswith("drm_")
    assert dream.status == "pending"
    assert dream.outputs == []
    assert dream.model.id == model
    assert dream.output_behavior.type == "create_new"

    deadline = time.monotonic() + 30
    while True:
        done = client.beta.dreams.retrieve(dream.id)
        if done.status not in ("pending", "running"):
            break
        assert time.monotonic() < deadline, "dream did not finish"
        time.sleep(0.1)
    assert done.status == "completed", done.error
    assert done.error is None
    assert done.ended_at is not None
    assert done.usage.output_tokens > 0
    [output] = done.outputs
    assert output.memory_store_id != store.id
    assert _memories(client, output.memory_store_id) == [("/city.md", "Lisbon")]
    assert _memories(client, store.id) == [("/city.md", "Berlin"), ("/home.md", "Berlin too")]

    listed = client.beta.dreams.list(statuses=["completed"])
    assert dream.id in [d.id for d in listed.data]
    archived = client.beta.dreams.archive(dream.id)
    assert archived.archived_at is not None
    assert dream.id not in [d.id for d in client.beta.dreams.list().data]
    assert dream.id in [d.id for d in client.beta.dreams.list(include_archived=True).data]


def test_dream_update_existing_writes_the_input_store(client, env, agent):
    """output_behavior update_existing: the answer ({"/city.md": "Lisbon"}, scripted for
    AGENTFLEET_DREAM_UPDATE_MODEL) is applied to the input store: /city.md updated in place,
    /home.md (dropped by the answer) deleted, each a new version; outputs name the input store."""
    model = os.environ["AGENTFLEET_DREAM_UPDATE_MODEL"]
    session = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    store = client.beta.memory_stores.create(name=f"py-dream-up-{uuid.uuid4().hex[:8]}")
    city = client.beta.memory_stores.memories.create(store.id, path="/city.md", content="Berlin")
    client.beta.memory_stores.memories.create(store.id, path="/home.md", content="Berlin too")
    dream = client.beta.dreams.create(
        inputs=[
            {"type": "memory_store", "memory_store_id": store.id},
            {"type": "sessions", "session_ids": [session.id]},
        ],
        model=model,
        output_behavior={"type": "update_existing", "memory_store_id": store.id},
    )
    assert dream.output_behavior.type == "update_existing"
    assert dream.output_behavior.memory_store_id == store.id

    deadline = time.monotonic() + 30
    while True:
        done = client.beta.dreams.retrieve(dream.id)
        if done.status not in ("pending", "running"):
            break
        assert time.monotonic() < deadline, "dream did not finish"
        time.sleep(0.1)
    assert done.status == "completed", done.error
    [output] = done.outputs
    assert output.memory_store_id == store.id
    assert _memories(client, store.id) == [("/city.md", "Lisbon")]
    after = client.beta.memory_stores.memories.retrieve(city.id, memory_store_id=store.id)
    assert after.content == "Lisbon"
    ops = sorted(v.operation for v in client.beta.memory_stores.memory_versions.list(store.id))
    assert ops == ["created", "created", "deleted", "modified"]
