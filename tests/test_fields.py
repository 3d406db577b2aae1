"""The metadata field names (memwarden/core/fields.py): one enum that the codec, the filters and
the indexes read, stored as the plain names it always had.

A name that leaves the process must be a plain ``str``: Chroma's HTTP client serialises a
``where`` filter and metadata with orjson, which refuses a ``str`` subclass (such as an enum
member) as a dict key, so a member used as a key there fails only against a server.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import orjson
import pytest

from memwarden.core.fields import FACET_FIELDS, LABEL_PREFIX, Meta, label_field, ns_label
from memwarden.core.records import MemoryRecord
from memwarden.guards.visibility import hidden_filter, visible_filter
from memwarden.memory.backends import StoredRow, subject_filter
from memwarden.memory.codec import from_row, stored_metadata, to_metadata
from memwarden.memory.facets import CLEARED
from memwarden.memory.retrieval import time_filter
from memwarden.policies.engine import PolicyEngine
from memwarden.policies.loading import parse_policy_text
from memwarden.policies.partitions import Partition, plan
from memwarden.policies.pushdown import outside_scope_filter, prefix_filter, scope_filter

pytestmark = pytest.mark.unit

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
RECORD = MemoryRecord(id="mem_1", namespace=("ward3", "patients", "p1"), content="penicillin", writer="alice",
                      writer_roles=("physician",), subjects=("p1",), parents=("mem_0",), labels={"sens": "high"},
                      created_at=NOW, valid_from=NOW, valid_to=NOW + timedelta(days=1),
                      expires_at=NOW + timedelta(hours=1), supersedes="mem_0", key="k", approvals=("bob",))
POLICY = """p, physician, ward3/**, read
p, physician, ward3/billing/*, read, deny
p, physician, ward3/notes/**, read, allow, kind=fact&source!=external&label.sens!=high&writer_role=nurse&content=statement
g, alice, physician
"""


def _keys(where: Any) -> list[Any]:
    """Every dict key in a filter tree, operators included."""
    if isinstance(where, dict):
        return [k for key, value in where.items() for k in (key, *_keys(value))]
    if isinstance(where, list):
        return [k for item in where for k in _keys(item)]
    return []


def test_the_stored_metadata_has_exactly_the_enums_fields_as_plain_strings() -> None:
    metadata = to_metadata(RECORD)
    assert all(type(k) is str for k in metadata), [k for k in metadata if type(k) is not str]
    named = {k for k in metadata if not k.startswith(LABEL_PREFIX) and not k.startswith("ns_") or k == Meta.NS_DEPTH}
    # The facet fields are written when the texts are embedded (memwarden.memory.facets).
    assert named == {m.value for m in Meta} - FACET_FIELDS
    assert set(CLEARED) == FACET_FIELDS and all(type(k) is str for k in CLEARED)
    assert {ns_label(i) for i in range(3)} | {label_field("sens")} <= set(metadata)
    orjson.dumps(metadata)  # what the HTTP client sends
    assert from_row(StoredRow(RECORD.id, RECORD.content, stored_metadata(metadata))) == RECORD


def test_every_filter_builder_names_fields_as_plain_strings() -> None:
    engine = PolicyEngine(data=parse_policy_text(POLICY))
    scope = engine.scope(engine.subjects("alice", ()), "read", ("ward3",))
    filters = [visible_filter(NOW), hidden_filter(NOW), subject_filter("p1"), prefix_filter(("ward3", "patients")),
               scope_filter(scope), outside_scope_filter(scope),
               time_filter(as_of=NOW, created_after=NOW, created_before=NOW, time_range=(NOW, NOW))]
    targets = plan(scope, [Partition(("ward3", "patients"), 3), Partition(("ward3", "notes"), 4), Partition(("ward3",), 2)])
    filters += [f for t in targets for f in (t.where, t.outside) if f]
    keys = [k for where in filters for k in _keys(where)]
    assert {Meta.STATUS, Meta.EXPIRES_AT, Meta.SUBJECTS, Meta.NS_DEPTH, Meta.KIND, Meta.SOURCE, Meta.WRITER_ROLES,
            Meta.CONTENT_CLASS, Meta.T_FROM, Meta.CREATED_AT, label_field("sens"), ns_label(0)} <= set(keys)
    assert all(type(k) is str for k in keys), [k for k in keys if type(k) is not str]
    for where in filters:
        orjson.dumps(where)


def test_an_enum_member_as_a_key_is_what_the_http_client_refuses() -> None:
    # Why the builders use .value: this is the failure they would meet against a server.
    with pytest.raises(TypeError):
        orjson.dumps({Meta.STATUS: "active"})
