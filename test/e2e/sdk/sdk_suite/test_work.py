"""The Environment Work API through the official Python SDK (`client.beta.environments.work`):
a session on a self_hosted environment enqueues an item; poll (environment service key as
Bearer) claims it with a secret carrying the sessions_token; ack, heartbeat (NO_HEARTBEAT, then
the previous last_heartbeat), a stale heartbeat is 412 heartbeat_precondition_failed, update,
retrieve, list, stats and stop; out-of-range arguments are 400 naming the field; the
environment key is refused on other APIs. Proves core/src/work and gateway/src/routes/work.ts."""
import base64
import json
import os
import urllib.error
import urllib.request

import anthropic
import pytest


def _environment_key(environment_id: str) -> str:
    req = urllib.request.Request(
        f"{os.environ['AGENTFLEET_BASE_URL']}/v1/svc/api_keys",
        method="POST",
        headers={
            "x-api-key": os.environ["AGENTFLEET_API_KEY"],
            "anthropic-beta": "managed-agents-2026-04-01",
            "content-type": "application/json",
        },
        data=json.dumps({"name": "py-work", "environment_id": environment_id}).encode(),
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200
        return json.loads(r.read())["key"]


def _bearer(token: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=os.environ["AGENTFLEET_BASE_URL"], api_key=None, auth_token=token, max_retries=0
    )


def _sessions_token(secret: str) -> str:
    padded = secret + "=" * (-len(secret) % 4)
    return json.loads(base64.urlsafe_b64decode(padded))["sessions_token"]


def test_work_lifecycle_through_the_python_sdk(client, agent):
    env = client.beta.environments.create(name="py-work", config={"type": "self_hosted"})
    key = _environment_key(env.id)
    session = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    worker = _bearer(key)

    assert client.beta.environments.work.stats(env.id).depth == 1
    item = worker.beta.environments.work.poll(env.id, block_ms=999, anthropic_worker_id="py-1")
    assert item is not None
    assert item.type == "work" and item.data.id == session.id and item.state == "queued"
    token = _sessions_token(item.secret)
    assert worker.beta.environments.work.poll(env.id) is None

    claimed = _bearer(token)
    acked = worker.beta.environments.work.ack(item.id, environment_id=env.id)
    assert acked.state == "starting" and acked.secret is None
    hb = claimed.beta.environments.work.heartbeat(
        item.id, environment_id=env.id, expected_last_heartbeat="NO_HEARTBEAT", desired_ttl_seconds=30
    )
    assert hb.state == "active" and hb.lease_extended and hb.ttl_seconds == 30
    hb2 = claimed.beta.environments.work.heartbeat(
        item.id, environment_id=env.id, expected_last_heartbeat=hb.last_heartbeat
    )
    with pytest.raises(anthropic.PreconditionFailedError) as stale:
        claimed.beta.environments.work.heartbeat(
            item.id, environment_id=env.id, expected_last_heartbeat=hb.last_heartbeat
        )
    assert stale.value.status_code == 412
    details = stale.value.body["error"]["details"]
    assert details["error_code"] == "heartbeat_precondition_failed"
    assert details["current_state"]["last_heartbeat"] == hb2.last_heartbeat

    assert claimed.beta.sessions.retrieve(session.id).id == session.id
    updated = client.beta.environments.work.update(item.id, environment_id=env.id, metadata={"rack": "r1"})
    assert updated.metadata == {"rack": "r1"}
    got = client.beta.environments.work.retrieve(item.id, environment_id=env.id)
    assert got.state == "active" and got.secret is None
    assert [w.id for w in worker.beta.environments.work.list(env.id)] == [item.id]

    stopped = claimed.beta.environments.work.stop(item.id, environment_id=env.id, force=True)
    assert stopped.state == "stopped"
    with pytest.raises(anthropic.ConflictError):
        claimed.beta.environments.work.stop(item.id, environment_id=env.id, force=True)


def test_work_bad_arguments_and_key_scope(client, agent):
    env = client.beta.environments.create(name="py-work-bad", config={"type": "self_hosted"})
    key = _environment_key(env.id)
    client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    worker = _bearer(key)
    with pytest.raises(anthropic.BadRequestError) as e:
        worker.beta.environments.work.poll(env.id, block_ms=5000)
    assert "block_ms" in str(e.value)
    item = worker.beta.environments.work.poll(env.id)
    with pytest.raises(anthropic.BadRequestError) as e:
        worker.beta.environments.work.heartbeat(item.id, environment_id=env.id, desired_ttl_seconds=0)
    assert "desired_ttl_seconds" in str(e.value)
    # The environment key is for its environment's work routes only.
    with pytest.raises(anthropic.PermissionDeniedError):
        worker.beta.sessions.list()
    # Through x-api-key (not Bearer) it is refused even on its own work routes.
    req = urllib.request.Request(
        f"{os.environ['AGENTFLEET_BASE_URL']}/v1/environments/{env.id}/work/poll",
        headers={"x-api-key": key, "anthropic-beta": "managed-agents-2026-04-01"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, timeout=30)
    assert refused.value.code == 403
