"""Files (upload, list, retrieve metadata, download, delete) and models (list with pagination,
retrieve, unknown model → 404) through client.beta.*."""
import anthropic
import pytest


def test_files_round_trip(client):
    f = client.beta.files.upload(file=("notes.txt", b"hello from python", "text/plain"))
    assert f.id.startswith("file_") and f.filename == "notes.txt" and f.size_bytes == 17
    assert f.id in [x.id for x in client.beta.files.list(limit=100)]
    meta = client.beta.files.retrieve_metadata(f.id)
    assert meta.filename == "notes.txt" and meta.mime_type.startswith("text/plain")
    assert client.beta.files.download(f.id).read() == b"hello from python"
    deleted = client.beta.files.delete(f.id)
    assert deleted.id == f.id
    with pytest.raises(anthropic.NotFoundError):
        client.beta.files.retrieve_metadata(f.id)


def test_models_list_paginates_and_retrieves(client, text_model):
    first = client.beta.models.list(limit=1)
    assert len(first.data) == 1
    every = [m.id for m in client.beta.models.list(limit=1)]  # auto-pagination
    assert len(every) == len(set(every)) and len(every) >= 2
    assert text_model in every
    one = client.beta.models.retrieve(text_model)
    assert one.id == text_model and one.type == "model"
    assert one.lifecycle is not None
    with pytest.raises(anthropic.NotFoundError):
        client.beta.models.retrieve("no-such-model")
