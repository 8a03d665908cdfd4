"""Outbound webhooks received by a Python program: a tenant endpoint (created over HTTP: the
SDK has no method for /v1/svc/webhook_endpoints) gets a turn's session.status_idled delivery,
captured by the driver's receiver (AGENTFLEET_WEBHOOK_RECEIVER_URL). The official SDK's
`client.beta.webhooks.unwrap` (anthropic[webhooks]: `standardwebhooks` is pinned in
test/kit/python/requirements.txt) verifies the Standard Webhooks signature with the endpoint's
secret and parses the body into its BetaWebhookEvent; a tampered body, or another key, fails.
`parse_unverified` parses the same body. Server: core/src/webhooks/."""
import json
import os
import time
import urllib.request

import pytest
from anthropic import AnthropicError

from turns import message_turn

BETA = {"anthropic-beta": "managed-agents-2026-04-01"}


def test_webhook_delivery_parsed_by_the_python_sdk(client, env, agent):
    receiver = os.environ["AGENTFLEET_WEBHOOK_RECEIVER_URL"]
    endpoint = client.post(
        "/v1/svc/webhook_endpoints",
        body={"url": receiver, "event_types": ["session.status_idled"]},
        cast_to=object,
        options={"headers": BETA},
    )
    secret = endpoint["secret"]
    assert secret.startswith("whsec_") and endpoint["id"].startswith("whep_")
    served = client.get(f"/v1/svc/webhook_endpoints/{endpoint['id']}", cast_to=object, options={"headers": BETA})
    assert "secret" not in served

    session = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    message_turn(client, session.id, "a webhook for python")

    delivery = None
    deadline = time.time() + 20
    while delivery is None and time.time() < deadline:
        with urllib.request.urlopen(receiver, timeout=10) as res:
            for d in json.loads(res.read()):
                if json.loads(d["body"])["data"]["id"] == session.id:
                    delivery = d
        if delivery is None:
            time.sleep(0.1)
    assert delivery is not None, "no delivery for the session arrived"

    body, headers = delivery["body"], delivery["headers"]
    event = client.beta.webhooks.unwrap(body, headers=headers, key=secret)
    with pytest.raises(Exception) as tampered:
        client.beta.webhooks.unwrap(body.replace(session.id, session.id + "x"), headers=headers, key=secret)
    assert not isinstance(tampered.value, AnthropicError)  # a verification failure, not a missing module
    other = "whsec_" + "A" * 43 + "="
    with pytest.raises(Exception):
        client.beta.webhooks.unwrap(body, headers=headers, key=other)
    assert int(headers["webhook-timestamp"]) <= time.time() + 5
    assert client.beta.webhooks.parse_unverified(body).id == event.id
    assert event.type == "event" and event.id.startswith("evt_")
    assert event.data.type == "session.status_idled"
    assert event.data.id == session.id
    assert event.data.workspace_id and event.data.organization_id
