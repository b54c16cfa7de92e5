"""Which model each agent of the decision desk uses (main, light or deep: graphs/context.py `model_for`)."""

from graphs.model_roles import DEEP, LIGHT, MAIN

MODELS = {"request reader": LIGHT, "analyst": MAIN, "memory summary": LIGHT, "debater": MAIN, "judge": DEEP}
