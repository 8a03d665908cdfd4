"""Skills through the official Python SDK: create (files in one top-level directory), a new
version, download the version's zip, delete a version and the skill; built-ins listed and
not deletable."""
import io
import uuid
import zipfile

import anthropic
import pytest


def skill_md(name: str, description: str) -> bytes:
    return f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n".encode()


def test_skill_create_version_download_delete(client: anthropic.Anthropic) -> None:
    name = f"py-skill-{uuid.uuid4().hex[:6]}"
    skill = client.beta.skills.create(
        files=[
            (f"{name}/SKILL.md", skill_md(name, "From Python.")),
            (f"{name}/scripts/run.py", b"print('v1')\n"),
        ],
        display_name="Python skill",
    )
    assert skill.id.startswith("skill_")
    assert skill.display_name == "Python skill"
    assert skill.source.type == "custom"
    assert skill.latest_version_id.isdigit()
    assert client.beta.skills.retrieve(skill.id).id == skill.id

    v2 = client.beta.skills.versions.create(
        skill.id,
        files=[
            (f"{name}/SKILL.md", skill_md(name, "Second.")),
            (f"{name}/scripts/run.py", b"print('v2')\n"),
        ],
    )
    assert v2.skill_id == skill.id and v2.name == name and v2.description == "Second."
    assert int(v2.id) > int(skill.latest_version_id)
    assert [v.id for v in client.beta.skills.versions.list(skill.id)] == [
        v2.id,
        skill.latest_version_id,
    ]
    got = client.beta.skills.versions.retrieve(skill.latest_version_id, skill_id=skill.id)
    assert got.description == "From Python."

    data = client.beta.skills.versions.download(v2.id, skill_id=skill.id).read()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert sorted(z.namelist()) == [f"{name}/SKILL.md", f"{name}/scripts/run.py"]
        assert z.read(f"{name}/scripts/run.py") == b"print('v2')\n"

    deleted = client.beta.skills.versions.delete(skill.latest_version_id, skill_id=skill.id)
    assert deleted.id == skill.latest_version_id and deleted.type == "skill_version_deleted"
    with pytest.raises(anthropic.BadRequestError):
        client.beta.skills.versions.delete(v2.id, skill_id=skill.id)

    assert client.beta.skills.delete(skill.id).type == "skill_deleted"
    with pytest.raises(anthropic.NotFoundError):
        client.beta.skills.retrieve(skill.id)


def test_builtin_skills_listed_and_not_deletable(client: anthropic.Anthropic) -> None:
    ids = sorted(s.id for s in client.beta.skills.list(source="anthropic"))
    assert ids == ["docx", "pdf", "pptx", "xlsx"]
    with pytest.raises(anthropic.BadRequestError):
        client.beta.skills.delete("xlsx")
