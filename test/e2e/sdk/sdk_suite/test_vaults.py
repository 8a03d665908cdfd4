"""Vaults and credentials through client.beta.vaults (create, retrieve, update, list, archive,
delete) and client.beta.vaults.credentials (every SDK auth type; no secret is ever served), and
a session created with vault_ids (validated, stored, served). Server: core/src/domain/vaults.ts."""
import uuid

import anthropic
import pytest

SECRET = f"py-vault-secret-{uuid.uuid4().hex}"


def test_vaults_and_credentials_round_trip_without_secrets(client):
    v = client.beta.vaults.create(display_name="py-vault", metadata={"team": "a"})
    assert v.id.startswith("vlt_") and v.type == "vault" and v.metadata == {"team": "a"}
    assert client.beta.vaults.retrieve(v.id).display_name == "py-vault"
    assert client.beta.vaults.update(v.id, display_name="py-renamed").display_name == "py-renamed"
    assert v.id in [x.id for x in client.beta.vaults.list(limit=100)]

    cr = client.beta.vaults.credentials
    bearer = cr.create(
        v.id,
        display_name="bearer",
        auth={"type": "static_bearer", "token": SECRET, "mcp_server_url": "https://mcp.py.test/mcp"},
    )
    assert bearer.id.startswith("vcrd_") and bearer.auth.type == "static_bearer"
    oauth = cr.create(
        v.id,
        auth={
            "type": "mcp_oauth",
            "access_token": SECRET,
            "mcp_server_url": "https://oauth.py.test/mcp",
            "refresh": {
                "client_id": "cid",
                "refresh_token": SECRET,
                "token_endpoint": "https://auth.py.test/token",
                "token_endpoint_auth": {"type": "client_secret_basic", "client_secret": SECRET},
            },
        },
    )
    assert oauth.auth.refresh.token_endpoint_auth.type == "client_secret_basic"
    env_var = cr.create(
        v.id,
        auth={
            "type": "environment_variable",
            "secret_name": "PY_TOKEN",
            "secret_value": SECRET,
            "networking": {"type": "unrestricted"},
        },
    )
    assert env_var.auth.secret_name == "PY_TOKEN"

    served = [bearer, oauth, env_var, *cr.list(v.id, limit=100)]
    served += [cr.retrieve(x.id, vault_id=v.id) for x in (bearer, oauth, env_var)]
    served.append(cr.update(bearer.id, vault_id=v.id, auth={"type": "static_bearer", "token": SECRET + "2"}))
    for x in served:
        assert SECRET not in x.model_dump_json()
    assert sorted(x.id for x in cr.list(v.id, limit=100)) == sorted([bearer.id, oauth.id, env_var.id])

    archived = cr.archive(env_var.id, vault_id=v.id)
    assert archived.archived_at is not None
    assert env_var.id not in [x.id for x in cr.list(v.id, limit=100)]
    assert cr.delete(bearer.id, vault_id=v.id).type == "vault_credential_deleted"
    with pytest.raises(anthropic.NotFoundError):
        cr.retrieve(bearer.id, vault_id=v.id)
    # Its MCP server does not exist: the probe cannot tell (test_mcp_oauth.py has live servers).
    checked = cr.mcp_oauth_validate(oauth.id, vault_id=v.id)
    assert checked.type == "vault_credential_validation" and checked.status == "unknown"
    assert SECRET not in checked.model_dump_json()

    assert client.beta.vaults.archive(v.id).archived_at is not None
    assert client.beta.vaults.delete(v.id).type == "vault_deleted"
    with pytest.raises(anthropic.NotFoundError):
        client.beta.vaults.retrieve(v.id)


def test_session_with_vault_ids(client, agent, env):
    v = client.beta.vaults.create(display_name="py-session-vault")
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id, vault_ids=[v.id])
    assert s.vault_ids == [v.id]
    assert client.beta.sessions.retrieve(s.id).vault_ids == [v.id]
    with pytest.raises(anthropic.BadRequestError) as err:
        client.beta.sessions.create(agent=agent.id, environment_id=env.id, vault_ids=["vlt_missing"])
    assert "vault_ids[0]" in str(err.value)
