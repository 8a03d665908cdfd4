"""Environment networking config through the official Python SDK, unchanged.

`limited` networking round-trips (allowed_hosts, allow_package_managers, allow_mcp_servers),
an update that omits a field keeps it, `unrestricted` replaces it, and a host that is not a
host name is a 400 naming the field. What the proxy does with these settings is proved with a
real sandbox in test/e2e/environments/env-networking.test.ts. `base_image` (not an SDK field; sent as extra_body):
this suite's platform runs with SANDBOX_DRIVER=none (no sandboxes), where it is stored and
served; its refusal on the local driver and its docker job on Nomad are in
test/e2e/environments/base-image.test.ts.
"""
import anthropic
import pytest


def test_limited_networking_round_trips_and_updates(client):
    env = client.beta.environments.create(
        name="py-limited",
        config={
            "type": "cloud",
            "networking": {
                "type": "limited",
                "allowed_hosts": ["api.example.com", "*.example.org"],
                "allow_package_managers": True,
                "allow_mcp_servers": False,
            },
        },
    )
    net = env.config.networking
    assert net.type == "limited"
    assert net.allowed_hosts == ["api.example.com", "*.example.org"]
    assert net.allow_package_managers is True
    assert net.allow_mcp_servers is False

    got = client.beta.environments.retrieve(env.id).config.networking
    assert (got.type, got.allowed_hosts, got.allow_package_managers, got.allow_mcp_servers) == (
        "limited",
        ["api.example.com", "*.example.org"],
        True,
        False,
    )

    # omitted fields of a limited policy keep their value
    upd = client.beta.environments.update(
        env.id,
        config={"type": "cloud", "networking": {"type": "limited", "allow_mcp_servers": True}},
    )
    net = upd.config.networking
    assert net.allowed_hosts == ["api.example.com", "*.example.org"]
    assert net.allow_package_managers is True
    assert net.allow_mcp_servers is True

    opened = client.beta.environments.update(
        env.id, config={"type": "cloud", "networking": {"type": "unrestricted"}}
    )
    assert opened.config.networking.type == "unrestricted"
    client.beta.environments.delete(env.id)


def test_a_host_that_is_not_a_host_name_is_refused(client):
    with pytest.raises(anthropic.BadRequestError) as exc:
        client.beta.environments.create(
            name="py-bad-host",
            config={
                "type": "cloud",
                "networking": {"type": "limited", "allowed_hosts": ["https://api.example.com/x"]},
            },
        )
    assert exc.value.status_code == 400
    assert "allowed_hosts" in str(exc.value)


def test_base_image_without_sandboxes_is_stored_and_served(client):
    env = client.beta.environments.create(
        name="py-image", extra_body={"base_image": "python:3.12-slim"}
    )
    assert getattr(env, "base_image", None) == "python:3.12-slim"
    client.beta.environments.delete(env.id)
