"""JSON Schemas for rule files and architecture profiles."""
