"""The controller's results side: aggregation of concurrent runs and the report."""
