"""The model roles a workflow gives its agents (each its models.py); graphs/context.py `model_for` maps a role to
the run's model."""

MAIN, LIGHT, DEEP = "main", "light", "deep"
