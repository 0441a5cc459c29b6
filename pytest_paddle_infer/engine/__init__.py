"""The executor child: the Paddle work of cases (prepare, run, measure, localize, trials).

Nothing here is imported by the pytest process (session/, plugin.py), except a fixture that
hands Paddle objects to a test, in its body."""
