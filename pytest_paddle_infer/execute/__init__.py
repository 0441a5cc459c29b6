"""Execution: the supervised executor child and the one path every case takes through it;
predictors, baselines (predictor, dygraph, static, golden) and intermediate-tensor capture."""
