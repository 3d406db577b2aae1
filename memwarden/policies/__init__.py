"""Casbin model and policies, namespace canonicalisation, attribute conditions, decisions, read-filter pushdown."""
