"""Outbound webhooks received by a Python program: a tenant endpoint (created over HTTP: the
SDK has no method for /v1/svc/webhook_endpoints) gets a turn's session.status_idled delivery,
captured by the driver's receiver (AGENTFLEET_WEBHOOK_RECEIVER_URL). The Standard Webhooks
signature is checked here with hmac (the venv has no `standardwebhooks`, so the SDK's `unwrap`
cannot run: see the issue report), a tampered body fails that check, and the SDK's
`client.beta.webhooks.parse_unverified` parses the verified body into its BetaWebhookEvent.
Server: core/src/webhooks/."""
import base64
import hashlib
import hmac
import json
import os
import time
import urllib.request

from turns import message_turn

BETA = {"anthropic-beta": "managed-agents-2026-04-01"}


def signature_ok(secret: str, headers: dict, body: str) -> bool:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.{body}".encode()
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    given = [s.split(",", 1)[1] for s in headers["webhook-signature"].split(" ") if s.startswith("v1,")]
    return any(hmac.compare_digest(expected, g) for g in given)


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
    assert signature_ok(secret, headers, body)
    assert not signature_ok(secret, headers, body.replace(session.id, session.id + "x"))
    assert int(headers["webhook-timestamp"]) <= time.time() + 5
    event = client.beta.webhooks.parse_unverified(body)
    assert event.type == "event" and event.id.startswith("evt_")
    assert event.data.type == "session.status_idled"
    assert event.data.id == session.id
    assert event.data.workspace_id and event.data.organization_id
