"""The core layer: errors, records, operations and the schema every other layer shares."""
