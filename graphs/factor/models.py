"""Which model each agent of the factor workflow uses (main, light or deep: graphs/context.py `model_for`)."""

from graphs.model_roles import DEEP, MAIN

MODELS = {"spec reader": MAIN, "factor coder": MAIN, "semantic judge": DEEP}
