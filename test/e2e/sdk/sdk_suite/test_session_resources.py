"""client.beta.sessions.resources: add a file, list (paginated), retrieve, update (a file takes
no token: 400), delete; another session's resource is a 404. On this platform (no sandbox) a
repository resource is refused at create with a 400 naming resources[0].type."""
import anthropic
import pytest


def test_session_resources_round_trip(client, agent, env):
    s = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    other = client.beta.sessions.create(agent=agent.id, environment_id=env.id)
    files = [
        client.beta.files.upload(file=(f"r{i}.txt", b"resource", "text/plain")) for i in range(3)
    ]
    added = [
        client.beta.sessions.resources.add(s.id, type="file", file_id=f.id) for f in files
    ]
    assert [r.file_id for r in added] == [f.id for f in files]
    assert added[0].mount_path == f"/mnt/session/uploads/{files[0].id}"
    assert added[0].id.startswith("sres_")

    seen = [r.id for r in client.beta.sessions.resources.list(s.id, limit=2)]
    assert seen == [r.id for r in added]  # auto-pagination follows next_page
    got = client.beta.sessions.resources.retrieve(added[1].id, session_id=s.id)
    assert got.type == "file" and got.file_id == files[1].id
    assert [r.id for r in client.beta.sessions.retrieve(s.id).resources] == seen

    with pytest.raises(anthropic.BadRequestError) as err:
        client.beta.sessions.resources.update(
            added[0].id, session_id=s.id, authorization_token="tok"
        )
    assert "authorization_token" in str(err.value)
    with pytest.raises(anthropic.NotFoundError):
        client.beta.sessions.resources.retrieve(added[0].id, session_id=other.id)
    with pytest.raises(anthropic.BadRequestError) as err:
        client.beta.sessions.resources.add(s.id, type="file", file_id="file_nope")
    assert "file_id" in str(err.value)

    gone = client.beta.sessions.resources.delete(added[0].id, session_id=s.id)
    assert gone.id == added[0].id and gone.type == "session_resource_deleted"
    with pytest.raises(anthropic.NotFoundError):
        client.beta.sessions.resources.retrieve(added[0].id, session_id=s.id)
    assert [r.id for r in client.beta.sessions.resources.list(s.id)] == seen[1:]


def test_repository_resource_needs_an_enforcement_point(client, agent, env):
    with pytest.raises(anthropic.BadRequestError) as err:
        client.beta.sessions.create(
            agent=agent.id,
            environment_id=env.id,
            resources=[
                {
                    "type": "github_repository",
                    "url": "https://github.com/octo/repo",
                    "authorization_token": "ghp_secret_py",
                }
            ],
        )
    assert "resources[0].type" in str(err.value)
    assert "ghp_secret_py" not in str(err.value)
