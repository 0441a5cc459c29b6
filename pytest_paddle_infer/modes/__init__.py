"""Run modes: the tables of modes and toggles, the recipes (Config calls) they give,
what this installation can run, GPUs per worker, and the build plans of TensorRT candidates."""
