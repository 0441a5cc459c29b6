"""The executor child: the Paddle work of cases (prepare, run, measure, localize, trials); the
pytest process imports nothing here, but for a fixture handing Paddle objects to a test."""
