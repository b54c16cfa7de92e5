"""Which model each agent of the signal workflow uses (main, light or deep: graphs/context.py `model_for`)."""

from graphs.model_roles import LIGHT, MAIN

MODELS = {"data fetcher": LIGHT, "planner": MAIN, "signal coder": MAIN}
