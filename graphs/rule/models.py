"""Which model each agent of the rule workflow uses (main, light or deep: graphs/context.py `model_for`)."""

from graphs.context import MAIN

MODELS = {"rule checker": MAIN}
