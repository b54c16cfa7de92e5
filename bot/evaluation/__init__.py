"""`quantdesk eval`: a workflow's dataset of requests run against the configured model, measured per workflow
(`Workflow.measure`), with tokens, latency and cost, reported as a table, a CSV and a JSON file."""
