"""Memory search (POST /v1/memory_stores/{id}/search): the SDK has no search method, so the
official client's generic `post` drives it against a store filled through
client.beta.memory_stores.memories. The suite's platform configures no embedding model, so the
answer is lexical and says so. Server: core/src/memory/search/, gateway/src/routes/memorySearch.ts."""
import uuid

import anthropic
import pytest


def test_memory_search_lexical(client):
    s = client.beta.memory_stores.create(name=f"py-search-{uuid.uuid4().hex[:8]}")
    mm = client.beta.memory_stores.memories
    mm.create(s.id, path="/runbooks/deploy.md", content="Deploy the gateway: roll the fleet.")
    mm.create(s.id, path="/recipes/soup.md", content="Simmer the onions, add stock and thyme.")
    r = client.post(
        f"/v1/memory_stores/{s.id}/search",
        body={"query": "how to deploy the gateway", "limit": 5},
        cast_to=object,
    )
    assert r["mode"] == "lexical" and "embedding_model" not in r
    assert r["data"][0]["path"] == "/runbooks/deploy.md"
    assert r["data"][0]["memory_id"].startswith("mem_")
    with pytest.raises(anthropic.BadRequestError) as e:
        client.post(f"/v1/memory_stores/{s.id}/search", body={"query": "x", "limit": 0}, cast_to=object)
    assert "limit" in str(e.value)
    with pytest.raises(anthropic.NotFoundError):
        client.post("/v1/memory_stores/memstore_nope/search", body={"query": "x"}, cast_to=object)
