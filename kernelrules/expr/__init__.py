"""The rule condition language: a small lark grammar, parsed and tree-walked, never eval-ed."""
