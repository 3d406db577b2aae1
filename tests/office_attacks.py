"""What the attack tests on the contradiction check's windows share: the bundled office policy
with the detector as the benchmark tunes it, colleagues' agent sessions, and the check that a
planted change was held and is not what the manager's search returns."""

from __future__ import annotations

from pathlib import Path

from memwarden import Memory, Principal, Status
from memwarden.guards.defaults import default_validators
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.memory.session import Session


def office_memory(tmp_path: Path) -> Memory:
    """A memory under the bundled office policy, HashingEmbedding, the default chain with the
    detector quarantining at 0.3 (as the benchmark tunes it)."""
    chain = default_validators()
    chain[0].quarantine_at = 0.3
    return Memory.open(tmp_path / "data", policy="office", embedding=HashingEmbedding(), validators=chain)


def agents(mem: Memory, names: list[str]) -> list[Session]:
    """An agent session of each employee in ``names``."""
    return [mem.session(Principal(name, roles=["employee"]), source="agent") for name in names]


def held_and_hidden(mem: Memory, status: Status, planted: str, established: str, query: str,
                    namespace: tuple[str, ...]) -> None:
    """The change was held (``status``), and the manager's search of ``namespace`` for ``query``
    returns the established record, not the change."""
    assert status is Status.QUARANTINED
    frank = mem.session(Principal("frank", roles=["manager"]))
    found = [h.record.content for h in frank.search(query, namespace, k=500)]
    assert planted not in found and established in found


#: The shared project notes the attack tests write into.
NOTES = ("office", "projects", "orion", "notes")


def planted_against(tmp_path: Path, established: str, planted: str, query: str) -> None:
    """The manager establishes ``established`` in :data:`NOTES`; an agent's ``planted`` is
    held, and the manager's search for ``query`` returns his record, not the change."""
    with office_memory(tmp_path) as mem:
        frank = mem.session(Principal("frank", roles=["manager"]))
        assert frank.write(established, NOTES, kind="fact").status is Status.ACTIVE
        mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
        record = mallory.write(planted, NOTES, kind="fact")
        held_and_hidden(mem, record.status, planted, established, query, NOTES)


def restated_beside(tmp_path: Path, established: str, restated: str) -> None:
    """The benign twin: the manager establishes ``established`` in :data:`NOTES`; an agent's
    faithful ``restated`` is stored active."""
    with office_memory(tmp_path) as mem:
        frank = mem.session(Principal("frank", roles=["manager"]))
        assert frank.write(established, NOTES, kind="fact").status is Status.ACTIVE
        mallory = mem.session(Principal("mallory", roles=["employee"]), source="agent")
        assert mallory.write(restated, NOTES, kind="fact").status is Status.ACTIVE
