"""Which model each agent of the rule workflow uses (main, light or deep: graphs/context.py `model_for`)."""

from graphs.model_roles import MAIN

MODELS = {"rule checker": MAIN}
