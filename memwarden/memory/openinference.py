"""OpenInference attributes of a memory span, so that Phoenix (and other OpenInference
readers: Arize, Langfuse's OpenInference mapping) render memory operations as what they are.

- ``openinference.span.kind``: ``RETRIEVER`` for every ``search_memory`` span (search, get,
  list, history); ``CHAIN`` for writes, updates and deletions. OpenInference has no kind for a
  write, and ``CHAIN`` ("a link between application steps") is the one that claims no LLM,
  tool or embedding call. Without a kind Phoenix shows ``unknown``.
- ``retrieval.documents.{i}.document.id`` and ``.score``: the records a read returned, in
  order, with their score. Ids are not content: the audit log and ``memwarden.record_ids``
  carry them too. ``.document.content`` only when content capture is on. Withheld records
  never reach a result, so they never become documents.
- ``input.value`` / ``output.value`` (JSON): who asked for what where, and what the
  governance decided, without content: Phoenix shows them as the span's input and output, so
  an auditor reads the principal, the namespace, the decision and the rule in its span list.
  The query text or written content joins ``input.value`` only when capture is on.
- ``metadata`` (JSON): principal, roles, namespace, decision and outcome, which Phoenix can
  filter on (``metadata['principal'] == 'alice'``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from memwarden.core.namespace import namespace_text
from memwarden.core.schema import OP_KINDS

SPAN_KIND = "openinference.span.kind"
RETRIEVER, CHAIN = "RETRIEVER", "CHAIN"
JSON_MIME = "application/json"

#: Most documents put on one span: a search returns k records, but a list or a history may
#: return many, and span attributes are not a database.
MAX_DOCUMENTS = 100


def openinference_attributes(attrs: Mapping[str, Any], op: object | None, result: object | None, *,
                             clip: Callable[[str], str] | None = None) -> dict[str, Any]:
    """The OpenInference attributes implied by a finished span's ``memwarden.*`` attributes
    (``attrs``), the operation and its result.

    ``clip`` is given when content capture is on: it shortens each content string recorded.
    """
    kind = OP_KINDS.get(attrs.get("memwarden.operation", ""))
    retriever = kind is not None and kind.span == "search_memory"
    out: dict[str, Any] = {SPAN_KIND: RETRIEVER if retriever else CHAIN}
    request = {
        "principal": attrs.get("memwarden.principal"),
        "roles": list(attrs.get("memwarden.roles") or ()),
        "operation": attrs.get("memwarden.operation"),
        "action": attrs.get("memwarden.action"),
        "namespace": attrs.get("memwarden.namespace"),
    }
    if clip is not None:
        for field in ("query", "content"):
            value = getattr(op, field, None)
            if isinstance(value, str):
                request[field] = clip(value)
    outcome = {key: attrs.get(f"memwarden.{name}") for key, name in (
        ("outcome", "outcome"), ("decision", "decision"), ("rule", "rule"), ("returned", "records.returned"),
        ("withheld", "records.withheld"), ("held", "records.held"), ("audit_seq", "audit.seq"))}
    verdicts = list(attrs.get("memwarden.verdicts") or ())
    if verdicts:
        outcome["verdicts"] = verdicts
    out.update({
        "input.value": _json({k: v for k, v in request.items() if v not in (None, [])}),
        "input.mime_type": JSON_MIME,
        "output.value": _json({k: v for k, v in outcome.items() if v is not None}),
        "output.mime_type": JSON_MIME,
        "metadata": _json({k: v for k, v in {
            "principal": request["principal"], "roles": request["roles"], "namespace": request["namespace"],
            "decision": outcome["decision"], "outcome": outcome["outcome"]}.items() if v is not None}),
    })
    if retriever:
        out.update(_documents(result, clip))
    return out


def _documents(result: object | None, clip: Callable[[str], str] | None) -> dict[str, Any]:
    items = result if isinstance(result, list) else [result] if result is not None else []
    out: dict[str, Any] = {}
    index = 0
    for item in items:
        record, score = getattr(item, "record", item), getattr(item, "score", None)
        record_id = getattr(record, "id", None)
        if not isinstance(record_id, str):  # a listed namespace, not a record
            continue
        prefix = f"retrieval.documents.{index}.document"
        out[f"{prefix}.id"] = record_id
        if score is not None:
            out[f"{prefix}.score"] = round(float(score), 6)
        namespace = getattr(record, "namespace", None)
        if namespace is not None:
            out[f"{prefix}.metadata"] = _json({"namespace": namespace_text(namespace),
                                               "kind": getattr(getattr(record, "kind", None), "value", None)})
        if clip is not None and isinstance(getattr(record, "content", None), str):
            out[f"{prefix}.content"] = clip(record.content)
        index += 1
        if index == MAX_DOCUMENTS:
            break
    return out


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
