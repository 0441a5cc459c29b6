"""A user's tests that take the fixtures do not show Paddle's own start-up warning (a
missing ccache) nor the train-mode BatchNorm warning the zoo's statistics pass raises."""


def test_fixtures_add_no_paddle_warnings(run_pytest, pytester, xdist_mode):
    pytester.makepyfile(test_user='''
        def test_predictor(paddle_predictor, paddle_inputs):
            out = paddle_predictor("tiny_cnn", run_mode="cpu_fp32").run(paddle_inputs("tiny_cnn"))
            assert len(out) == 1


        def test_layer(paddle_dygraph_layer):
            assert not paddle_dygraph_layer("tiny_detector").training
    ''')
    result = run_pytest("-W", "always", *xdist_mode)
    result.assert_outcomes(passed=2)
    text = result.stdout.str()
    assert "No ccache found" not in text
    assert "track global mean" not in text
