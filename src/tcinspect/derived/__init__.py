"""What follows from a report's recorded data alone (pure; no torch): the collectives each graph runs and the
divergences between ranks. Both sides of the pipeline use it: ``parse.merge`` fills ``Report.divergence`` as the
ranks are merged, and the readers (analysis, render) show and judge it. It imports only the data model."""
