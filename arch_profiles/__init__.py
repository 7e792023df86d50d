"""Built-in architecture profiles, one YAML file per GPU family (shipped as package data)."""
