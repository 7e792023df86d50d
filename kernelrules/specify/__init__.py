"""Give each discovered kernel a launch signature and constexpr values: spec, trace, guesses."""
