"""Deployments through client.beta.deployments (create with a cron schedule, retrieve, update,
list, pause, unpause, run, archive) and client.beta.deployment_runs (retrieve, list with
has_error): a manual run creates a session with the deployment's agent and environment; an
invalid cron or timezone is a 400 naming the field. Server: core/src/deployments/."""
import anthropic
import pytest

HELLO = [{"type": "user.message", "content": [{"type": "text", "text": "py deployment"}]}]


def test_deployment_create_run_and_runs_list(client, env, agent):
    d = client.beta.deployments.create(
        name="py-deployment",
        agent=agent.id,
        environment_id=env.id,
        initial_events=HELLO,
        schedule={"type": "cron", "expression": "0 9 * * 1-5", "timezone": "Europe/Paris"},
    )
    assert d.id.startswith("depl_") and d.type == "deployment" and d.status == "active"
    assert d.agent.id == agent.id and d.agent.version == agent.version
    assert d.schedule.expression == "0 9 * * 1-5" and len(d.schedule.upcoming_runs_at) == 5
    assert client.beta.deployments.retrieve(d.id).name == "py-deployment"
    assert client.beta.deployments.update(d.id, name="py-renamed").name == "py-renamed"
    assert d.id in [x.id for x in client.beta.deployments.list(limit=100)]

    paused = client.beta.deployments.pause(d.id)
    assert paused.status == "paused" and paused.paused_reason.type == "manual"
    run = client.beta.deployments.run(d.id)
    assert run.id.startswith("drun_") and run.error is None
    assert run.trigger_context.type == "manual" and run.deployment_id == d.id
    session = client.beta.sessions.retrieve(run.session_id)
    assert session.environment_id == env.id and session.agent.id == agent.id
    assert client.beta.deployment_runs.retrieve(run.id).session_id == run.session_id
    assert client.beta.deployments.unpause(d.id).status == "active"

    assert [r.id for r in client.beta.deployment_runs.list(deployment_id=d.id)] == [run.id]
    assert [r.id for r in client.beta.deployment_runs.list(deployment_id=d.id, has_error=False)] == [run.id]
    assert list(client.beta.deployment_runs.list(deployment_id=d.id, has_error=True)) == []

    # A vault gone since: the run records the SDK's error type instead of a session.
    vault = client.beta.vaults.create(display_name="py-deploy-vault")
    dv = client.beta.deployments.create(
        name="py-vault-gone",
        agent=agent.id,
        environment_id=env.id,
        initial_events=HELLO,
        vault_ids=[vault.id],
    )
    client.beta.vaults.delete(vault.id)
    failed = client.beta.deployments.run(dv.id)
    assert failed.session_id is None and failed.error.type == "vault_not_found_error"
    assert [r.id for r in client.beta.deployment_runs.list(deployment_id=dv.id, has_error=True)] == [failed.id]

    archived = client.beta.deployments.archive(d.id)
    assert archived.archived_at is not None and archived.schedule.upcoming_runs_at == []
    with pytest.raises(anthropic.BadRequestError) as e:
        client.beta.deployments.run(d.id)
    assert "deployment_id" in e.value.message


def test_deployment_bad_schedule_is_400_naming_the_field(client, env, agent):
    for schedule, field in (
        ({"type": "cron", "expression": "* * * *", "timezone": "UTC"}, "schedule.expression"),
        ({"type": "cron", "expression": "0 0 L * *", "timezone": "UTC"}, "schedule.expression"),
        ({"type": "cron", "expression": "* * * * *", "timezone": "Nowhere/Land"}, "schedule.timezone"),
    ):
        with pytest.raises(anthropic.BadRequestError) as e:
            client.beta.deployments.create(
                name="bad", agent=agent.id, environment_id=env.id, initial_events=HELLO, schedule=schedule
            )
        assert field in e.value.message
