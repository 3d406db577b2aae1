"""Proof an auditor can check with the public key alone: signed erasure receipts, the exported
audit log with its signed head, and the store's public keys across a rotation.

Every forgery is tried as an outsider would: on the files they were handed, with any key but
the store's. An auditor's recomputation of the digest is written here from its documented
definition (hashlib only), not with memwarden's functions.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from memwarden import Memory, Principal
from memwarden.core.errors import ProofError, SignatureInvalid
from memwarden.memory.audit_export import to_csv, to_jsonl, verify_export
from memwarden.memory.embeddings import HashingEmbedding
from memwarden.memory.receipts import verify_receipt
from memwarden.memory.signing import PublicKeys
from memwarden.memory.tombstones import tombstone_mark

pytestmark = pytest.mark.integration

CONTENT_CANARY = "CANARY-Zq7 patient p91 has a rare condition called canarytosis"
DERIVED_CANARY = "CANARY-Xk2 canarytosis plan for the ward"
UPDATED_CANARY = "CANARY-Wm5 canarytosis confirmed by biopsy"
LABEL_CANARY = "CANARY-label-Vb8"
NAMESPACE_CANARY = "canary-room-Ty4"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture
def store(tmp_path: Path, policy_file: Path):
    """A memory with one erased subject: (data dir, receipt, the erased records' (id, content))."""
    data = tmp_path / "data"
    with Memory.open(data, policy=policy_file, embedding=HashingEmbedding()) as mem:
        alice = mem.session(Principal("alice"))
        first = alice.write(CONTENT_CANARY, "ward3/patients/p91", subjects=["p91"], labels={"note": LABEL_CANARY})
        newer = alice.update(first.id, content=UPDATED_CANARY)
        derived = alice.write(DERIVED_CANARY, ("ward3", "patients", NAMESPACE_CANARY), parents=[newer.id])
        alice.write("Patient 3 is fine", "ward3/patients/p3", subjects=["p3"])
        held = [(r.id, r.content) for r in (first, newer, derived)]
        spaces = [r.namespace for r in (first, newer, derived)]
        receipt = mem.session(Principal("dpo")).erase(subject="p91")
    return data, receipt, list(zip(held, spaces))


def _public(data: Path) -> PublicKeys:
    from memwarden.memory.signing import SigningKeys

    keys = SigningKeys.load(data / "audit.signing.key")
    assert keys is not None
    return PublicKeys.from_json(keys.public.to_json(), "key.pub")


def _receipt_doc(receipt) -> dict:
    return json.loads(receipt.model_dump_json())


# -- receipts ----------------------------------------------------------------------------------

def test_a_receipt_verifies_with_the_public_key_alone(store, tmp_path: Path) -> None:
    data, receipt, _ = store
    public = _public(data)
    shutil.rmtree(data)  # the auditor never sees the store
    checked = verify_receipt(_receipt_doc(receipt), public)
    assert checked == receipt and checked.count == 3 and checked.subject == "p91"
    # The erasure's intent entry and its final entry.
    assert checked.key_id == public.first_id and checked.audit_seqs == (receipt.audit_seq - 1, receipt.audit_seq)
    assert checked.rules == ("p, privacy_officer, ward3/**, erase, allow",)


def test_an_auditor_recomputes_the_digest_for_a_record_they_hold(store) -> None:
    _, receipt, pairs = store
    held = [pair for pair, _ in pairs]
    for record_id, content in held:  # an auditor holding a copy of each record
        leaf = hashlib.sha256(f"{record_id}\n{_sha(content)}".encode()).hexdigest()
        assert leaf in receipt.record_leaves
    assert receipt.records_digest == _sha("\n".join(sorted(receipt.record_leaves)))
    assert sorted(receipt.erased_ids_sha256) == sorted(_sha(i) for i, _ in held)


def test_a_receipt_never_holds_erased_content(store, tmp_path: Path) -> None:
    data, receipt, pairs = store
    held = [pair for pair, _ in pairs]
    path = tmp_path / "receipt.json"
    path.write_text(receipt.model_dump_json(indent=1), encoding="utf-8")
    text = path.read_text(encoding="utf-8")
    canaries = [CONTENT_CANARY, DERIVED_CANARY, UPDATED_CANARY, LABEL_CANARY, NAMESPACE_CANARY, "canarytosis",
                "CANARY", "Zq7", "Xk2", "Wm5"]
    derived = [_sha(c) for _, c in held] + [tombstone_mark("p91", ns, c) for (_, c), ns in pairs] + [i for i, _ in held]
    values = json.dumps(receipt.model_dump(mode="json"))
    for needle in canaries + derived:
        assert needle not in text and needle.lower() not in text.lower()
        assert needle not in values
    for name, value in receipt.model_dump(mode="json").items():  # every field, one by one
        for needle in canaries + derived:
            assert needle not in json.dumps(value), (name, needle)


def test_changing_any_byte_of_a_receipt_fails(store, tmp_path: Path) -> None:
    data, receipt, _ = store
    public = _public(data)
    raw = receipt.model_dump_json().encode()
    original = json.loads(raw)
    checked = 0
    for i in range(len(raw)):
        for replacement in {b"0", b"x"} - {raw[i:i + 1]}:
            mutated = raw[:i] + replacement + raw[i + 1:]
            try:
                doc = json.loads(mutated)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue  # not JSON: nothing to verify
            if doc == original:
                continue
            with pytest.raises(ProofError):
                verify_receipt(doc, public)
            checked += 1
    assert checked > len(raw)


@pytest.mark.parametrize("edit", ["count", "subject", "leaf dropped", "leaves reordered", "extra field",
                                  "signature removed", "key id"])
@pytest.mark.slow
def test_an_edited_receipt_fails(store, edit: str) -> None:
    data, receipt, _ = store
    doc = _receipt_doc(receipt)
    if edit == "count":
        doc["count"] = 2
    elif edit == "subject":
        doc["subject"] = "p92"
    elif edit == "leaf dropped":
        doc["record_leaves"] = doc["record_leaves"][1:]
    elif edit == "leaves reordered":
        doc["record_leaves"] = doc["record_leaves"][::-1]
    elif edit == "extra field":
        doc["note"] = "all good"
    elif edit == "signature removed":
        del doc["signature"]
    else:
        doc["key_id"] = "0" * 32
    with pytest.raises(ProofError):
        verify_receipt(doc, _public(data))


def test_another_stores_key_fails(store, tmp_path: Path, policy_file: Path) -> None:
    data, receipt, _ = store
    with Memory.open(tmp_path / "other", policy=policy_file, embedding=HashingEmbedding()) as other:
        other.session(Principal("alice")).write("Patient 5 is fine", "ward3/patients/p5", subjects=["p5"])
        theirs = other.session(Principal("dpo")).erase(subject="p5")
    with pytest.raises(SignatureInvalid, match="not among the keys"):
        verify_receipt(_receipt_doc(receipt), _public(tmp_path / "other"))
    with pytest.raises(SignatureInvalid):
        verify_receipt(_receipt_doc(theirs), _public(data))
    # Their receipt under our key id is still their signature, which our key does not make.
    forged = {**_receipt_doc(theirs), "key_id": receipt.key_id}
    with pytest.raises(SignatureInvalid, match="does not verify"):
        verify_receipt(forged, _public(data))


# -- key rotation ------------------------------------------------------------------------------

def test_a_rotation_keeps_old_receipts_verifiable_and_is_audited(store) -> None:
    data, receipt, _ = store
    from memwarden.memory.audit import AuditLog

    log = AuditLog(data / "audit.sqlite3")
    old, new, seq = log.rotate_signing_key("ops")
    entry = list(log.entries())[-1]
    assert entry["op"] == "rotate_key" and entry["old_key_id"] == old and entry["new_key_id"] == new
    assert entry["seq"] == seq and log.verify().ok
    report, rows, head = log.export()
    log.close()
    public = _public(data)
    assert [k["key_id"] for k in public.keys] == [old, new] and public.keys[0]["retired_at"]
    assert verify_receipt(_receipt_doc(receipt), public).key_id == old
    assert head["key_id"] == new and verify_export(to_jsonl(rows, head), public, "log.jsonl").ok
    # Only the new key: what the old one signed is not vouched for.
    only_new = PublicKeys([dict(public.keys[1], endorsement=None)], "new.pub")
    with pytest.raises(SignatureInvalid):
        verify_receipt(_receipt_doc(receipt), only_new)


def test_a_key_slipped_into_the_public_keys_is_refused(store, tmp_path: Path, policy_file: Path) -> None:
    data, _, _ = store
    with Memory.open(tmp_path / "other", policy=policy_file, embedding=HashingEmbedding()) as other:
        other.session(Principal("alice")).write("x", "ward3/patients/p5")
    ours, theirs = _public(data).keys, _public(tmp_path / "other").keys
    forged = {"key_id": ours[0]["key_id"], "signature": base64.b64encode(bytes(64)).decode()}
    with pytest.raises(ProofError, match="endorsement by key 1 does not verify"):
        PublicKeys(ours + [dict(theirs[0], endorsement=forged)])
    with pytest.raises(ProofError, match="not endorsed"):
        PublicKeys(ours + theirs)


# -- the exported log --------------------------------------------------------------------------

@pytest.fixture
def exported(store):
    from memwarden.memory.audit import AuditLog

    data, _, _ = store
    log = AuditLog(data / "audit.sqlite3")
    report, rows, head = log.export()
    log.close()
    assert report.ok and head["count"] == len(rows) > 4
    return data, rows, head


def test_an_exported_log_verifies_with_the_public_key_alone(exported) -> None:
    data, rows, head = exported
    public = _public(data)
    shutil.rmtree(data)
    report = verify_export(to_jsonl(rows, head), public, "log.jsonl")
    assert report.ok and report.entries == len(rows)
    assert verify_export(to_csv(rows), public, "log.csv", head).ok
    assert verify_export(to_jsonl(rows, head), public, "log.jsonl", head).ok


@pytest.mark.slow
def test_changing_any_byte_of_an_exported_log_fails(exported) -> None:
    data, rows, head = exported
    public = _public(data)
    raw = to_jsonl(rows, head).encode()
    original = [json.loads(line) for line in raw.splitlines()]
    checked = 0
    for i in range(0, len(raw)):
        mutated = raw[:i] + (b"0" if raw[i:i + 1] != b"0" else b"1") + raw[i + 1:]
        try:
            parsed = [json.loads(line) for line in mutated.splitlines()]
        except (json.JSONDecodeError, UnicodeDecodeError):
            parsed = None
        if parsed == original:
            continue
        try:
            report = verify_export(mutated.decode("utf-8", "replace"), public, "log.jsonl")
        except ProofError:
            checked += 1
            continue
        assert not report.ok, f"byte {i} changed and the log still verifies"
        checked += 1
    assert checked > len(raw) // 2


def _lines(rows, head) -> list[str]:
    return to_jsonl(rows, head).splitlines()


@pytest.mark.parametrize("cut", ["first", "middle", "last", "all", "reordered", "duplicated"])
@pytest.mark.slow
def test_dropped_or_reordered_entries_fail(exported, cut: str) -> None:
    data, rows, head = exported
    lines = _lines(rows, head)
    entries, head_line = lines[:-1], lines[-1]
    if cut == "first":
        entries = entries[1:]
    elif cut == "middle":
        del entries[len(entries) // 2]
    elif cut == "last":
        entries = entries[:-1]
    elif cut == "all":
        entries = []
    elif cut == "reordered":
        entries[1], entries[2] = entries[2], entries[1]
    else:
        entries.insert(2, entries[2])
    report = verify_export("\n".join(entries + [head_line]) + "\n", _public(data), "log.jsonl")
    assert not report.ok and report.problems


def test_a_head_from_another_store_or_an_edited_head_fails(exported, tmp_path: Path, policy_file: Path) -> None:
    data, rows, head = exported
    with Memory.open(tmp_path / "other", policy=policy_file, embedding=HashingEmbedding()) as other:
        other.session(Principal("alice")).write("x", "ward3/patients/p5")
    with pytest.raises(SignatureInvalid, match="not among the keys"):
        verify_export(to_jsonl(rows, head), _public(tmp_path / "other"), "log.jsonl")
    with pytest.raises(SignatureInvalid, match="does not verify"):
        verify_export(to_jsonl(rows[:-1], {**head, "count": len(rows) - 1, "last_hash": rows[-2][3]}),
                      _public(data), "log.jsonl")


def test_a_csv_cell_edited_beside_an_intact_body_fails(exported) -> None:
    data, rows, head = exported
    text = to_csv(rows).replace(",dpo,", ",alice,", 1)
    assert text != to_csv(rows)
    report = verify_export(text, _public(data), "log.csv", head)
    assert not report.ok and any("CSV columns do not match" in p for p in report.problems)


def test_a_tampered_log_is_not_exported(exported) -> None:
    """A fresh signed head over a cut log would vouch for the cut."""
    import sqlite3

    from memwarden.memory.audit import AuditLog

    data, rows, _ = exported
    conn = sqlite3.connect(data / "audit.sqlite3", isolation_level=None)
    conn.execute("DELETE FROM audit WHERE seq = ?", (len(rows),))
    conn.close()
    log = AuditLog(data / "audit.sqlite3")
    report, _, head = log.export()
    log.close()
    assert not report.ok and head is None
