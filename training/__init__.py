"""Training entry points and configurations."""
