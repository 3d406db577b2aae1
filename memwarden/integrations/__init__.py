"""Bridges to other systems: OpenTelemetry tracing and the LangGraph BaseStore adapter."""
