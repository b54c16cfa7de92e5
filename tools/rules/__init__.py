"""Trading rules: the rule language (syntax, parser, evaluator, explanation), its backtest, the saved rules and
their schedules, and the calculations a words rule's agent may call."""
