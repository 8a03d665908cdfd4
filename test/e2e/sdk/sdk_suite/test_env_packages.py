"""Environment `packages` through the official Python SDK, unchanged.

Package lists round-trip (SDK `BetaPackages` with every manager's list), and a package name
that is an option, a URL or a path is a 400 naming the field, at create and update (the build
would pass it as a command argument). The builds themselves (real registries, bwrap, read-only
mount) are proved in test/env-packages*.test.ts: this suite's platform runs without sandboxes.
"""
import anthropic
import pytest


def test_package_lists_round_trip(client):
    env = client.beta.environments.create(
        name="py-packages",
        config={
            "type": "cloud",
            "packages": {"pip": ["requests==2.31.0", "six"], "npm": ["@types/node", "is-odd@3.0.1"]},
        },
    )
    pkgs = client.beta.environments.retrieve(env.id).config.packages
    assert pkgs.pip == ["requests==2.31.0", "six"]
    assert pkgs.npm == ["@types/node", "is-odd@3.0.1"]
    assert pkgs.apt == [] and pkgs.cargo == [] and pkgs.gem == [] and pkgs.go == []
    client.beta.environments.delete(env.id)


@pytest.mark.parametrize(
    "lists,field",
    [
        ({"pip": ["--index-url=http://evil.example/simple"]}, "config.packages.pip[0]"),
        ({"npm": ["left-pad", "../../etc/passwd"]}, "config.packages.npm[1]"),
        ({"apt": ["hello; id"]}, "config.packages.apt[0]"),
        ({"go": ["-toolexec=/bin/sh"]}, "config.packages.go[0]"),
    ],
)
def test_bad_package_names_are_refused_naming_the_field(client, lists, field):
    with pytest.raises(anthropic.BadRequestError) as exc:
        client.beta.environments.create(
            name="py-bad-packages", config={"type": "cloud", "packages": lists}
        )
    assert field in str(exc.value)


def test_bad_package_name_on_update_leaves_the_environment_unchanged(client):
    env = client.beta.environments.create(
        name="py-packages-upd", config={"type": "cloud", "packages": {"pip": ["six"]}}
    )
    with pytest.raises(anthropic.BadRequestError) as exc:
        client.beta.environments.update(
            env.id, config={"type": "cloud", "packages": {"cargo": ["--git=https://evil"]}}
        )
    assert "config.packages.cargo[0]" in str(exc.value)
    pkgs = client.beta.environments.retrieve(env.id).config.packages
    assert pkgs.pip == ["six"] and pkgs.cargo == []
    client.beta.environments.delete(env.id)
