"""Run records (issue 41): what made each workflow run (its manifest), the data it read and the model calls it
made, stored so the run can be re-run from the record and its tokens counted against budgets."""
