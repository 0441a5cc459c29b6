"""localize/trials.py: a trial with Config calls added after the recipe (a PIR program's
custom passes, for the "all optimizations off" rung) is built and fed as the case's candidate
is: gpu_fp16+low_precision_io still feeds float16, the plan's remarks stay."""
import numpy as np

from pytest_paddle_infer.engine.localize.trials import with_extra_calls
from pytest_paddle_infer.models.inputs import InputSpec
from pytest_paddle_infer.models.source import ModelFiles
from pytest_paddle_infer.engine import build_plan as bp
from pytest_paddle_infer.modes.run_modes import call, parse_run_mode

X = InputSpec("x", (1, 3, 32, 32))
PIR = ModelFiles("m", "/models/m/inference.json", "/models/m/inference.pdiparams", (X,))


def test_extra_calls_keep_the_feed_dtype_and_the_rest_of_the_plan():
    plan = bp.candidate_plan(parse_run_mode("gpu_fp16+low_precision_io+memory_optim"), PIR, [X],
                             optim_root="/o")
    extra = (call("enable_custom_passes", (), True),)
    varied = with_extra_calls(plan, extra)
    assert varied.final.recipe == plan.final.recipe + extra
    assert (varied.feed_dtype, varied.remarks, varied.int8, varied.path) == \
        (plan.feed_dtype, plan.remarks, plan.int8, plan.path)
    fed = bp.candidate_feeds(varied, {"x": np.ones((1, 3, 32, 32), "float32")})
    assert fed["x"].dtype == np.float16  # as the case feeds its candidate
    assert with_extra_calls(plan, ()) is plan
