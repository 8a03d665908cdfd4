"""Memory stores, memories and memory versions through client.beta.memory_stores (create,
retrieve, update, list, archive, delete), .memories (create, retrieve, update, list, delete: a
path conflict and a failed content_sha256 precondition are 409s) and .memory_versions (list,
retrieve, redact). Server: core/src/memory/, gateway/src/routes/memoryStores.ts."""
import hashlib
import uuid

import anthropic
import pytest


def sha(s: str) -> str:
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


def test_memory_stores_round_trip(client):
    name = f"py-store-{uuid.uuid4().hex[:8]}"
    s = client.beta.memory_stores.create(name=name, description="py notes", metadata={"k": "v"})
    assert s.id.startswith("memstore_") and s.type == "memory_store" and s.archived_at is None
    assert client.beta.memory_stores.retrieve(s.id).name == name
    u = client.beta.memory_stores.update(s.id, name=name + "-2", metadata={"k": None, "n": "1"})
    assert u.name == name + "-2" and u.metadata == {"n": "1"}
    assert s.id in [x.id for x in client.beta.memory_stores.list(limit=100)]
    a = client.beta.memory_stores.archive(s.id)
    assert a.archived_at is not None
    assert s.id not in [x.id for x in client.beta.memory_stores.list(limit=100)]
    assert s.id in [x.id for x in client.beta.memory_stores.list(limit=100, include_archived=True)]
    with pytest.raises(anthropic.BadRequestError) as e:
        client.beta.memory_stores.memories.create(s.id, path="/x.md", content="x")
    assert "memory_store_id" in str(e.value)
    d = client.beta.memory_stores.delete(s.id)
    assert d.type == "memory_store_deleted" and d.id == s.id
    with pytest.raises(anthropic.NotFoundError):
        client.beta.memory_stores.retrieve(s.id)


def test_memories_conflicts_preconditions_versions_and_redact(client):
    s = client.beta.memory_stores.create(name=f"py-mem-{uuid.uuid4().hex[:8]}")
    mm = client.beta.memory_stores.memories
    mv = client.beta.memory_stores.memory_versions

    m = mm.create(s.id, path="/notes/todo.md", content="secret draft")
    assert m.id.startswith("mem_") and m.content is None
    assert m.content_sha256 == sha("secret draft") and m.content_size_bytes == 12
    assert mm.retrieve(m.id, memory_store_id=s.id).content == "secret draft"

    # Path conflicts: the same path, and a path below an existing memory.
    for path in ["/notes/todo.md", "/notes/todo.md/child"]:
        with pytest.raises(anthropic.ConflictError) as e:
            mm.create(s.id, path=path, content="again")
        err = e.value.body["error"] if "error" in e.value.body else e.value.body
        assert err["conflicting_path"] == "/notes/todo.md"
        assert err["conflicting_memory_id"] == m.id

    # A precondition on the current hash applies; a stale one is a 409.
    u = mm.update(
        m.id,
        memory_store_id=s.id,
        content="clean",
        precondition={"type": "content_sha256", "content_sha256": sha("secret draft")},
    )
    assert u.memory_version_id != m.memory_version_id and u.content_sha256 == sha("clean")
    with pytest.raises(anthropic.ConflictError):
        mm.update(
            m.id,
            memory_store_id=s.id,
            content="lost",
            precondition={"type": "content_sha256", "content_sha256": sha("secret draft")},
        )
    assert mm.retrieve(m.id, memory_store_id=s.id).content == "clean"
    r = mm.update(m.id, memory_store_id=s.id, path="/notes/done.md", view="full")
    assert r.path == "/notes/done.md" and r.content == "clean" and r.id == m.id
    listed = [x.path for x in mm.list(s.id, path_prefix="/notes/")]
    assert listed == ["/notes/done.md"]
    with pytest.raises(anthropic.BadRequestError) as e:
        mm.create(s.id, path="/a/../b", content="x")
    assert "path" in str(e.value)

    versions = list(mv.list(s.id, memory_id=m.id))
    assert [v.operation for v in versions] == ["modified", "modified", "created"]
    first = versions[-1]
    assert mv.retrieve(first.id, memory_store_id=s.id).content == "secret draft"
    red = mv.redact(first.id, memory_store_id=s.id)
    assert red.redacted_at is not None and red.content is None and red.path is None
    again = mv.retrieve(first.id, memory_store_id=s.id)
    assert again.id == first.id and again.content is None and again.operation == "created"
    with pytest.raises(anthropic.ConflictError):
        mv.redact(r.memory_version_id, memory_store_id=s.id)

    gone = mm.delete(m.id, memory_store_id=s.id)
    assert gone.type == "memory_deleted"
    with pytest.raises(anthropic.NotFoundError):
        mm.retrieve(m.id, memory_store_id=s.id)
    assert [v.operation for v in mv.list(s.id, memory_id=m.id)][0] == "deleted"
    client.beta.memory_stores.delete(s.id)
