"""Run modes: the tables of modes and toggles, the recipes (Config calls) they give, what this
installation can run, and GPUs per worker."""
