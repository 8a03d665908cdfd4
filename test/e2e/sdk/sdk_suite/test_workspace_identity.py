"""workspace_id, execution_identity and environment scope through the Python SDK
(test/e2e/auth/workspace-identity.test.ts is the TypeScript counterpart)."""
import anthropic
import pytest


def test_workspace_id_other_workspace_is_refused(client, text_model):
    agent = client.beta.agents.create(name="py-ws", model=text_model)
    raw = client.beta.agents.with_raw_response.retrieve(agent.id)
    workspace = raw.headers.get("anthropic-workspace-id")
    assert workspace
    same = client.beta.agents.create(name="py-ws2", model=text_model, workspace_id=workspace)
    assert same.name == "py-ws2"
    with pytest.raises(anthropic.PermissionDeniedError):
        client.beta.agents.create(name="py-ws3", model=text_model, workspace_id="wrk_other")


def test_execution_identity_aws_role_and_account_scope_are_refused(client, text_model):
    with pytest.raises(anthropic.BadRequestError) as e:
        client.beta.agents.create(
            name="py-aws",
            model=text_model,
            execution_identity={"type": "aws_role", "role_arn": "arn:aws:iam::1:role/r"},
        )
    assert "execution_identity.type" in str(e.value)
    with pytest.raises(anthropic.BadRequestError) as e:
        client.beta.environments.create(name="py-acct", scope="account")
    assert "scope" in str(e.value)
    env = client.beta.environments.create(name="py-org", scope="organization")
    assert env.scope == "organization"
