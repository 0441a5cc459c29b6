"""Execution: the supervised executor child and the one path every case takes through it;
predictors, baselines (predictor, dygraph, static, golden) and intermediate-tensor capture."""

# under the cache dir: baseline outputs the xdist workers of one session share
# (runner.shared_outputs); here so the pytest process names it without importing numpy
SHARED_DIR = "shared-baselines"
