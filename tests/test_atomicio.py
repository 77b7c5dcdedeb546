"""Output writing never destroys what is not a regular file (issue 14, item 1)."""

import json
import os
import stat
import threading

import pytest

from dlscale.cli import main
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.machine.profile import MachineProfile, save_profile
from dlscale.perfmodel.output.atomicio import (
    atomic_write_text,
    atomic_write_with,
    check_output_path,
    plot_format,
)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_regular_file_replaced_with_umask_mode(tmp_path):
    path = tmp_path / "a.json"
    path.write_text("old")
    os.chmod(path, 0o600)
    atomic_write_text(path, "new")
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~_umask()
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_symlink_is_written_through_to_its_target(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "t.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    atomic_write_text(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["t.json"]


def test_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "later.json")
    atomic_write_text(link, "x")
    assert link.is_symlink() and (tmp_path / "later.json").read_text() == "x"


def test_fifo_is_written_directly_not_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def reader() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    t = threading.Thread(target=reader)
    t.start()
    atomic_write_text(fifo, "through the pipe")
    t.join(timeout=30)
    assert not t.is_alive()
    assert got == [b"through the pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert check_output_path(fifo, "-o") == fifo


def test_figure_writer_goes_through_fifo(tmp_path):
    fifo = tmp_path / "plot.svg"
    os.mkfifo(fifo)
    got: list[bytes] = []
    t = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    t.start()
    atomic_write_with(fifo, lambda tmp: open(tmp, "w").write("<svg/>"))
    t.join(timeout=30)
    assert got == [b"<svg/>"] and stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.parametrize("make, match", [
    (lambda d: d, "is a folder"),
    (lambda d: "", "empty file name"),
    (lambda d: "/proc/dlscale-x.json", "cannot create a file in /proc"),
    (lambda d: d / "f.txt" / "x.json", "Not a directory"),
])
def test_bad_output_paths_are_one_line_errors(tmp_path, make, match):
    (tmp_path / "f.txt").write_text("file")
    with pytest.raises(ConfigError, match=match):
        check_output_path(make(tmp_path), "-o")
    if make(tmp_path) != "":
        with pytest.raises(ConfigError, match=match if "create" not in match else "cannot"):
            atomic_write_text(make(tmp_path), "x")
    assert (tmp_path / "f.txt").read_text() == "file"


def test_check_leaves_nothing_behind(tmp_path):
    assert check_output_path(tmp_path / "new" / "x.json", "-o") == tmp_path / "new" / "x.json"
    assert check_output_path(tmp_path / "x.json", "-o") == tmp_path / "x.json"
    assert list(tmp_path.iterdir()) == []


def test_plot_format_follows_extension():
    assert plot_format("a.svg") == "svg" and plot_format("a.pdf") == "pdf"
    with pytest.raises(ConfigError, match=r"--plot: 'a': unknown plot format \(none\)"):
        plot_format("a")


def test_profile_is_written_through_symlink_with_umask_mode(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("{}")
    link = tmp_path / "p.json"
    link.symlink_to(target)
    save_profile(MachineProfile(kernels={"gemm_flops": 1e9}), link)
    assert link.is_symlink()
    assert json.loads(target.read_text())["kernels"]["gemm_flops"] == 1e9
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_umask()


def test_cli_output_to_dev_null_keeps_the_device(capsys):
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    code = main(["predict", "summit", "resnet50", "--nodes", "1,2", "-o", "/dev/null"])
    assert code == 0, capsys.readouterr().err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("argv", [
    ["predict", "summit", "resnet50", "--nodes", "1", "-o", "{tmp}"],
    ["predict", "summit", "resnet50", "--nodes", "1", "-o", ""],
    ["predict", "summit", "resnet50", "--nodes", "1", "-o", "/proc/dlscale.json"],
    ["predict", "summit", "resnet50", "--nodes", "1", "--plot", "{tmp}/x.txt"],
    ["plan", "resnet50", "--cluster", "summit", "-o", "{tmp}"],
    ["simulate", "summit", "--nodes", "2", "--trace-out", "{tmp}"],
])
def test_cli_bad_output_fails_before_any_work(tmp_path, capsys, argv):
    code = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""  # nothing computed, nothing printed
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_plot_svg_is_svg(tmp_path, capsys):
    svg = tmp_path / "s.svg"
    assert main(["predict", "summit", "resnet50", "--nodes", "1,2", "--plot", str(svg)]) == 0
    assert b"<svg" in svg.read_bytes()[:400]


def test_output_to_own_stdout_file_is_appended_not_replaced(tmp_path):
    """``-o /dev/stdout > file``: the table and the JSON both end up in the file."""
    import subprocess
    import sys

    out = tmp_path / "both.txt"
    with open(out, "w") as fh:
        proc = subprocess.run([sys.executable, "-m", "dlscale", "predict", "summit", "resnet50",
                               "--nodes", "1,2", "--format", "csv", "-o", "/dev/stdout"],
                              stdout=fh, stderr=subprocess.PIPE, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.startswith("nodes,devices,")
    assert json.loads(text[text.index("{"):])["rows"][1]["nodes"] == 2


def test_a_missing_folder_is_created_and_said_once(tmp_path, capsys):
    """Issue 26 item 15: ``-o new/sub/file`` created the folders without a word."""
    from dlscale.cli import main

    target = tmp_path / "new" / "sub" / "rows.csv"
    assert main(["predict", "summit", "resnet50", "--nodes", "1,2", "-o", str(target)]) == 0
    err = capsys.readouterr().err
    assert err == f"note: created folder {str(tmp_path / 'new')!r} for {str(target)!r}\n"
    assert target.read_text().startswith("nodes,")
    assert main(["predict", "summit", "resnet50", "--nodes", "1,2", "-o",
                 str(target.with_name("again.csv"))]) == 0
    assert capsys.readouterr().err == ""   # the folder is there now
