// Placeholder: filled in by its owner (issue 3).
