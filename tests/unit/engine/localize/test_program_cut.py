"""localize/program_cut.py: where a program can be cut and what the cut feeds."""


def test_a_cut_never_feeds_a_list_value():
    """A PIR builtin.combine makes a list, not a tensor: a cut after it pulls the combine in
    and feeds the tensors it combines; ops whose output is a list are not cut points."""
    from pytest_paddle_infer.engine.localize.program_cut import Op, Program

    prog = Program("p.json", "pir", inputs=["x"], outputs=["c"])
    prog.ops = [Op(0, "pd_op.relu", ["x"], ["a"]), Op(1, "pd_op.relu", ["x"], ["b"]),
                Op(2, "builtin.combine", ["a", "b"], ["v"]), Op(3, "pd_op.concat", ["v"], ["c"])]
    prog.producer = {"a": 0, "b": 1, "v": 2, "c": 3}
    prog.dense = {"x", "a", "b", "c"}
    assert prog.segment(3, ["c"]) == [2, 3]
    assert prog.crossing(3, ["c"]) == ["a", "b"]
    assert prog.crossing(1, ["c"]) == ["x", "a"]  # relu b runs, a comes from before the cut
    assert [prog.cuttable(i) for i in range(4)] == [True, True, False, True]
