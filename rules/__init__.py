"""Built-in rules, one YAML file per rule (shipped as package data)."""
