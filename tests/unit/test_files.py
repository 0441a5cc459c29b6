"""files.py: the cross-process lock, atomic writes, shell-safe names and array files; and the
package importing where fcntl does not exist (Windows). In process, no Paddle."""
import json
import shlex
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pytest_paddle_infer.files import (ArrayFileError, WantedArray, atomic_write, load_arrays,
                                       safe_file_stem)
from pytest_paddle_infer.goldens import file_name


def test_the_plugin_imports_without_fcntl(tmp_path):
    """The plugin loads in every pytest session where the package is installed: it must not
    need fcntl, which Windows lacks."""
    code = ("import sys; sys.modules['fcntl'] = None\n"
            "import pytest_paddle_infer.plugin, pytest_paddle_infer.models.cache, pytest_paddle_infer.files\n"
            "from pytest_paddle_infer.files import file_lock\n"
            "with file_lock(sys.argv[1]):\n"
            "    print('locked')\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x.lock")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "locked"


def test_file_lock_excludes_other_processes(tmp_path):
    """Two processes holding one lock file never overlap."""
    script = textwrap.dedent("""
        import sys, time
        from pytest_paddle_infer.files import file_lock
        lock, log, who = sys.argv[1:]
        for _ in range(3):
            with file_lock(lock):
                with open(log, "a") as f:
                    f.write(who + " in\\n")
                time.sleep(0.05)
                with open(log, "a") as f:
                    f.write(who + " out\\n")
    """)
    lock, log = tmp_path / "sub" / "x.lock", tmp_path / "log"  # the lock's directory is created
    procs = [subprocess.Popen([sys.executable, "-c", script, str(lock), str(log), who]) for who in "ab"]
    assert [p.wait() for p in procs] == [0, 0]
    lines = log.read_text().split()
    pairs = list(zip(lines[0::4], lines[1::4], lines[2::4], lines[3::4]))
    assert len(pairs) == 6
    assert all(a == c and (b, d) == ("in", "out") for a, b, c, d in pairs)


# -- atomic writes ------------------------------------------------------------------------


def test_atomic_write_takes_bytes_text_or_a_writer(tmp_path):
    atomic_write(tmp_path / "new" / "a.bin", b"\x00\x01")
    atomic_write(tmp_path / "b.txt", "caf\u00e9")
    atomic_write(tmp_path / "c.npy", lambda f: np.save(f, np.arange(3)))
    assert (tmp_path / "new" / "a.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "b.txt").read_text(encoding="utf-8") == "caf\u00e9"
    assert np.load(tmp_path / "c.npy").tolist() == [0, 1, 2]
    atomic_write(tmp_path / "b.txt", "again", durable=True)
    assert (tmp_path / "b.txt").read_text() == "again"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.txt", "c.npy", "new"]  # no temporaries


def test_a_failed_write_keeps_the_old_file_and_leaves_nothing(tmp_path):
    target = tmp_path / "summary.json"
    target.write_text("old")

    def half_then_fail(f):
        f.write(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(target, half_then_fail)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_atomic_write_gives_the_permissions_of_a_plain_open(tmp_path):
    (tmp_path / "plain").write_text("x")
    atomic_write(tmp_path / "atomic", "x")
    mode = lambda name: stat.S_IMODE((tmp_path / name).stat().st_mode)  # noqa: E731
    assert mode("atomic") == mode("plain")


# -- file names ---------------------------------------------------------------------------

SHELL_SPECIAL = set(" \t\n[]()<>{}|&;$`'\"\\*?!~#:/%^=,@")


@pytest.mark.parametrize("case_id", [
    "tiny_cnn[1x3x32x32-onednn_fp32]",
    "paddle_s.yaml::tiny_cnn[1x3x32x32-cpu_fp32+memory_optim]",
    "tests/test_x.py::test_model[tiny_cnn-1x3x32x32-cpu_fp32]",
    "tiny_cnn[1x3x32x32-trt_fp16+dynamic_shape=x:1x3x8x8:1x3x16x16:2x3x16x16]",
    "tiny_cnn[1x3x32x32-trt_int8+calib_data=/data/my calib]",
    "m[a b]", "-n", ".hidden", "", "x" * 300, "caf\u00e9[\u4e2d]",
])
def test_safe_names_need_no_quoting(case_id):
    stem = safe_file_stem(case_id)
    assert shlex.quote(stem) == stem
    assert not set(stem) & SHELL_SPECIAL
    assert stem[0] not in "-." and 0 < len(stem) <= 120
    assert stem == safe_file_stem(case_id)  # the same on every worker and run


def test_safe_names_stay_readable_and_unique():
    assert safe_file_stem("tiny_cnn[1x3x32x32-onednn_fp32]").startswith("tiny_cnn-1x3x32x32-onednn_fp32-")
    assert safe_file_stem("a.yaml::m[1x8-cpu_fp32+memory_optim]").startswith("a.yaml__m-1x8-cpu_fp32+memory_optim-")
    assert safe_file_stem("plain_name-1") == "plain_name-1"  # nothing replaced: no hash
    # ids that differ only where characters were replaced still get different names
    ids = ["m[1 2]", "m[1:2]", "m[1/2]", "m-1_2", "m[1_2]", "x" * 300, "x" * 301]
    assert len({safe_file_stem(i) for i in ids}) == len(ids)
    assert file_name("tiny_cnn[1x3x32x32-cpu_fp32]") == safe_file_stem("tiny_cnn[1x3x32x32-cpu_fp32]") + ".npz"


# -- array files --------------------------------------------------------------------------

IMAGE = WantedArray("image", "float32", (1, 3, 8, 8))
SCALE = WantedArray("scale", "int32", (-1, 2))


def garbage_files(tmp_path):
    np.save(tmp_path / "good.npy", np.zeros((2, 3), "float32"))
    good = (tmp_path / "good.npy").read_bytes()
    np.savez(tmp_path / "good.npz", image=np.zeros((1, 3, 8, 8), "float32"))
    zipped = (tmp_path / "good.npz").read_bytes()
    files = {
        "text.npy": b"hello, not an array",
        "empty.npy": b"",
        "cut.npy": good[:-5],
        "cut.npz": zipped[: len(zipped) // 2],
        "json.npz": json.dumps({"image": [1, 2]}).encode(),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    np.savez(tmp_path / "objects.npz", image=np.array([{"a": 1}], dtype=object))
    return [*files, "objects.npy", "objects.npz"]


def test_a_file_that_is_not_an_array_says_so_and_never_suggests_pickle(tmp_path):
    for name in garbage_files(tmp_path):
        for mmap in (False, True):
            with pytest.raises(ArrayFileError) as info:
                load_arrays(tmp_path / name, [IMAGE], mmap=mmap)
            message = str(info.value)
            assert message.startswith(f"{tmp_path / name} is not a valid numpy array file: "), message
            assert "numpy.save" in message and "pickle" not in message.lower(), message
    assert "Python objects" in str(pytest.raises(ArrayFileError, load_arrays, tmp_path / "objects.npy", [IMAGE]).value)


def test_a_missing_file_cannot_be_read(tmp_path):
    with pytest.raises(ArrayFileError, match="nowhere.npy cannot be read: expected a readable .npy or .npz file, "
                                             "found No such file or directory"):
        load_arrays(tmp_path / "nowhere.npy", [IMAGE])


def test_names_dtypes_and_shapes_are_checked(tmp_path):
    np.savez(tmp_path / "b.npz", image=np.zeros((1, 3, 8, 8), "float32"), scale=np.ones((4, 2), "int32"),
             extra=np.zeros(1))
    arrays = load_arrays(tmp_path / "b.npz", [IMAGE, SCALE])
    assert list(arrays) == ["image", "scale"] and arrays["scale"].shape == (4, 2)  # -1: any size
    with pytest.raises(ArrayFileError, match=r"holds other arrays than the model's inputs: expected arrays "
                                             r"'image', 'scale', found arrays 'image', 'scale', 'extra' "
                                             r"\(missing: none; unknown: 'extra'\)"):
        load_arrays(tmp_path / "b.npz", [IMAGE, SCALE], exact=True)
    with pytest.raises(ArrayFileError, match="has no array named 'x': expected an array named 'x', "
                                             "found arrays 'image', 'scale', 'extra'"):
        load_arrays(tmp_path / "b.npz", [WantedArray("x", "float32")])
    with pytest.raises(ArrayFileError, match="holds array 'scale' with the wrong dtype: expected int64, "
                                             "found int32; save it as int64"):
        load_arrays(tmp_path / "b.npz", [WantedArray("scale", "int64")])
    with pytest.raises(ArrayFileError, match=r"holds array 'scale' with the wrong shape: expected \[-1, 3\] "
                                             r"\(-1: any size\), found \[4, 2\]"):
        load_arrays(tmp_path / "b.npz", [WantedArray("scale", "int32", (-1, 3))])
    np.save(tmp_path / "one.npy", np.zeros((1, 3, 8, 8), "float32"))
    assert load_arrays(tmp_path / "one.npy", [IMAGE], mmap=True)["image"].shape == (1, 3, 8, 8)
    with pytest.raises(ArrayFileError, match=r"holds a single array: expected one array per input "
                                             r"\('image', 'scale'\), found an .npy file"):
        load_arrays(tmp_path / "one.npy", [IMAGE, SCALE])
