"""Run records for the graphs (issue 41): the model-call recorder, the recorded model a re-run answers with, what
a node's output is as compared, and the `runs`, `rerun` and `usage` commands."""
