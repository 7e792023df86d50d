"""The rules engine and the judging core: rules judge configs on facts, repairs find passing ones."""
