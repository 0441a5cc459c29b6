"""The fixtures people use in their own tests: predictor factories and inputs."""


def test_fixtures_in_a_users_test(run_pytest, pytester, xdist_mode):
    pytester.makepyfile(test_user='''
        import numpy as np
        from pytest_paddle_infer import assert_tensors_close


        def test_detector_by_hand(paddle_predictor, paddle_baseline_predictor, paddle_inputs):
            inputs = paddle_inputs("tiny_detector", shapes={"image": (2, 3, 64, 64),
                                                           "im_shape": (2, 2), "scale_factor": (2, 2)})
            assert sorted(inputs) == ["im_shape", "image", "scale_factor"]
            assert inputs["im_shape"].dtype == np.int32 and inputs["image"].shape == (2, 3, 64, 64)
            candidate = paddle_predictor("tiny_detector", run_mode="onednn_fp32")
            baseline = paddle_baseline_predictor("tiny_detector")
            assert "enable_mkldnn()" in candidate.recipe and "switch_ir_optim(False)" in baseline.recipe
            got, want = candidate.run(inputs), baseline.run(inputs)
            assert list(got) == list(want) and len(got) == 2
            for name in want:
                assert_tensors_close(got[name], want[name], name=name)


        def test_predictors_are_cached_per_worker(paddle_predictor):
            a = paddle_predictor("tiny_cnn", run_mode="cpu_fp32")
            b = paddle_predictor("tiny_cnn", run_mode="cpu_fp32")
            assert a.predictor is b.predictor


        def test_inputs_are_seeded(paddle_inputs):
            a = paddle_inputs("tiny_cnn", seed=5)["x"]
            b = paddle_inputs("tiny_cnn", seed=5)["x"]
            c = paddle_inputs("tiny_cnn", seed=6)["x"]
            assert np.array_equal(a, b) and not np.array_equal(a, c)
            assert a.shape == (1, 3, 32, 32) and a.min() >= -1 and a.max() <= 1
    ''')
    result = run_pytest(*xdist_mode)
    result.assert_outcomes(passed=3)
