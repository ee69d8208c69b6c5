"""Session tests write under a private data folder, never the user's."""

import pytest


@pytest.fixture(autouse=True)
def private_data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUWATCH_DATA_DIR", str(tmp_path / "data"))
