"""Shared fixtures: a real embedded Memory on a temporary directory, with a fast embedding."""

from __future__ import annotations

from pathlib import Path

import pytest

from memwarden import Memory
from memwarden.memory.embeddings import HashingEmbedding

HOSPITAL = """
p, physician, ward3/patients/**, read
p, physician, ward3/patients/*, write
p, physician, ward3/patients/*, update
p, physician, ward3/patients/*, forget
p, nurse, ward3/patients/*, read
p, nurse, ward3/patients/*, write
p, billing_clerk, ward3/billing/**, read
p, billing_clerk, ward3/billing/**, write
p, billing_clerk, ward3/patients/*, read, deny
p, privacy_officer, ward3/**, erase
p, privacy_officer, ward3/**, read
g, alice, physician
g, bob, nurse
g, carol, billing_clerk
g, dpo, privacy_officer
"""


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    """The hospital test policy as a CSV file."""
    path = tmp_path / "policy.csv"
    path.write_text(HOSPITAL, encoding="utf-8")
    return path


@pytest.fixture
def mem(tmp_path: Path, policy_file: Path):
    """A real embedded Memory (Chroma PersistentClient) with the hashing test embedding."""
    memory = Memory.open(tmp_path / "data", policy=policy_file, embedding=HashingEmbedding(), count_withheld=True)
    yield memory
    memory.close()
