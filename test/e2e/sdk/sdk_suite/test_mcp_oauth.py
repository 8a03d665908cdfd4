"""mcp_oauth_validate through the official Python SDK (client.beta.vaults.credentials
.mcp_oauth_validate) against a real MCP server of ours (test/kit/fixtures/mcpServer.ts, official MCP
SDK, bearer required) and a token endpoint of ours (test/kit/fixtures/oauthServer.ts), both started
by test/e2e/sdk/python-sdk.test.ts on 127.0.0.1 and opened with EGRESS_ALLOW_PRIVATE_HOSTS.
Server: core/src/mcp/validate.ts."""
import os
import uuid

import anthropic
import pytest

MCP_URL = os.environ["AGENTFLEET_MCP_URL"]
MCP_TOKEN = os.environ["AGENTFLEET_MCP_TOKEN"]
OAUTH_URL = os.environ["AGENTFLEET_OAUTH_URL"]


def _vault(client):
    return client.beta.vaults.create(display_name=f"py-mcp-{uuid.uuid4().hex[:8]}")


def test_mcp_oauth_validate_valid_token(client):
    v = _vault(client)
    cred = client.beta.vaults.credentials.create(
        v.id, auth={"type": "mcp_oauth", "access_token": MCP_TOKEN, "mcp_server_url": MCP_URL}
    )
    r = client.beta.vaults.credentials.mcp_oauth_validate(cred.id, vault_id=v.id)
    assert r.type == "vault_credential_validation"
    assert (r.credential_id, r.vault_id) == (cred.id, v.id)
    assert r.status == "valid"
    assert r.mcp_probe is None and r.refresh is None and r.has_refresh_token is False
    assert MCP_TOKEN not in r.model_dump_json()


def test_mcp_oauth_validate_failed_refresh_is_invalid_and_recorded(client):
    stale = f"py-stale-{uuid.uuid4().hex}"
    refresh_token = f"py-revoked-{uuid.uuid4().hex}"
    v = _vault(client)
    cred = client.beta.vaults.credentials.create(
        v.id,
        auth={
            "type": "mcp_oauth",
            "access_token": stale,
            "mcp_server_url": MCP_URL,
            "refresh": {
                "client_id": "py-client",
                "refresh_token": refresh_token,
                "token_endpoint": OAUTH_URL,
                "token_endpoint_auth": {"type": "none"},
            },
        },
    )
    r = client.beta.vaults.credentials.mcp_oauth_validate(cred.id, vault_id=v.id)
    assert r.status == "invalid"
    assert r.has_refresh_token is True
    assert r.refresh is not None and r.refresh.status == "failed"
    assert r.refresh.http_response is not None and r.refresh.http_response.status_code == 400
    assert "invalid_grant" in r.refresh.http_response.body
    assert r.mcp_probe is not None and r.mcp_probe.method == "initialize"
    assert r.mcp_probe.http_response is not None and r.mcp_probe.http_response.status_code == 401
    dumped = r.model_dump_json()
    assert stale not in dumped and refresh_token not in dumped


def test_mcp_oauth_validate_refuses_other_credential_types(client):
    v = _vault(client)
    cred = client.beta.vaults.credentials.create(
        v.id, auth={"type": "static_bearer", "token": "py-static", "mcp_server_url": MCP_URL}
    )
    with pytest.raises(anthropic.BadRequestError) as err:
        client.beta.vaults.credentials.mcp_oauth_validate(cred.id, vault_id=v.id)
    assert "credential_id" in str(err.value)
