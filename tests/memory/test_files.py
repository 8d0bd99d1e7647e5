"""`memory._files`: what a path is, where a regular file should be."""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

import pytest

from memory._files import O_SAFE_READ, file_kind


def test_file_kind_names_each_kind_of_file_that_is_not_regular(tmp_path: Path) -> None:
    fifo, link = tmp_path / "fifo", tmp_path / "link"
    os.mkfifo(fifo)
    link.symlink_to(tmp_path / "elsewhere")
    # a short directory: a socket's path must fit in about 100 bytes
    with tempfile.TemporaryDirectory(dir="/tmp") as short, socket.socket(socket.AF_UNIX) as server:
        sock = Path(short) / "s"
        server.bind(str(sock))
        kinds = [file_kind(os.lstat(p).st_mode) for p in (fifo, link, sock, tmp_path, Path("/dev/null"))]
    assert kinds == ["a named pipe (FIFO)", "a symbolic link", "a socket", "a directory", "a device file"]


def test_a_safe_read_follows_no_link_and_does_not_wait_for_a_writer(tmp_path: Path) -> None:
    fifo, link = tmp_path / "fifo", tmp_path / "link"
    os.mkfifo(fifo)
    (tmp_path / "real").write_text("x")
    link.symlink_to(tmp_path / "real")
    with pytest.raises(OSError):
        os.open(link, O_SAFE_READ)
    fd = os.open(fifo, O_SAFE_READ)  # opening a FIFO without O_NONBLOCK would hang here
    os.close(fd)
