"""Privacy and accuracy theory for the Learn page and the planner: ε's meaning, amplification, expected accuracy."""
