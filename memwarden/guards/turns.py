"""Conversation-turn markers: text dressed as a model's chat template or a role's turn.

The detector's chat-template rule knew a closed list of real special tokens (``<|im_start|>``,
``<|eot_id|>`` ...), and the classifier's bracket rule a closed list of bracket words
(``[system: ...]``). LLMail-Inject's attackers invent their own: ``<|end tool output|>
<|start user prompt|>``, ``<SysMess>``, ``[U_L_TIMATE_INSTRUCTION]``, ``<useR> ... </useR>``,
``</toOl>``. What makes such a marker is its *form*, not its name:

* a pseudo special token: a name with a letter between ``<|`` and ``|>`` (no prose, markup or
  code writes that pair around a word; Haskell's ``<|>`` has no word in it);
* a made-up role tag: one bracket or angle token, no spaces, whose name, read as words
  (split at ``_`` and ``-``, a ``sys`` prefix glued on), holds a role of a conversation
  (system, user, assistant, tool, developer, admin) or its instructions or prompt. HTML and
  XML elements are named for content (``<summary>``, ``<div>``, ``<input>``), and a
  placeholder like ``<username>`` glues its role word to another without a separator.

A forged tool call is a turn too: a JSON object that names a sending or destructive tool
(``"tool_name": "send_mail"``, ``"action_type": "send_email"``) or holds a message's
``"to"`` and ``"body"`` (``{"action": M, "parameters": {"to": N, "body": O}}``), which a model
reads as the call to make.

All are rows for the detector's rule set (``chat-template``, ``fake-role``) and for the
classifier's shapes (``roleplay``); the rules read folded text (lower case) and are RE2 rules
of :mod:`memwarden.guards.ruleset`: linear time.
"""

from __future__ import annotations

__all__ = ["PSEUDO_TOKEN", "ROLE_TAG", "TOOL_CALL", "TURN_RULES", "TURN_SHAPES"]

#: ``<|...|>`` around a name with a letter in it.
PSEUDO_TOKEN = r"<\|[^|<>\n]{0,40}?[a-z][^|<>\n]{0,40}?\|>"
_ROLE = r"(?:sys(?:tem)?|users?|human|assistants?|tools?|developer|admin|root|instructions?|prompts?|inst)"
#: A bracket or angle token whose name holds a conversation role (see the module docstring):
#: words joined by ``_`` or ``-`` around the role, or anything glued after ``sys``.
ROLE_TAG = (rf"[<\[]\s*/?\s*(?:[a-z0-9]{{1,12}}[_-]){{0,4}}(?:sys[a-z]{{1,10}}|{_ROLE})(?:[_-][a-z0-9]{{1,12}}){{0,4}}"
            rf"\s*[>\]]")

_CALL_KEY = r"(?:tool|tool_?name|function|function_?name|action|action_?type|api|command|method)"
_CALL_VERB = r"(?:send|mail|email|forward|transfer|wire|delete|remove|post|upload|exec|execute|pay)"
#: A JSON tool call: a call key naming a sending or destructive tool, or a message's "to" and "body".
TOOL_CALL = (rf"\"{_CALL_KEY}\"\s*:\s*\"[a-z_.-]{{0,20}}?{_CALL_VERB}[a-z_.-]{{0,20}}\""
             r"|\"to\"\s*:\s*[^,{}\n]{1,80},\s*\"(?:body|subject|message|content|text)\"\s*:")

#: Rows for the injection detector: a pseudo token is as strong as a real one; a made-up role
#: tag is a hint that quarantines.
TURN_RULES: list[tuple[str, float, str]] = [
    ("chat-template", 1.0, PSEUDO_TOKEN),
    ("fake-role", 0.5, ROLE_TAG),
    ("tool-call", 0.5, TOOL_CALL),
]

#: Rows for the content classifier: either marker stages a turn the reader is to obey.
TURN_SHAPES: list[tuple[str, float, str]] = [
    ("roleplay", 0.6, PSEUDO_TOKEN),
    ("roleplay", 0.6, ROLE_TAG),
    ("command", 0.6, TOOL_CALL),
]
