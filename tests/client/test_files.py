"""fs/read_text_file and fs/write_text_file against real files in a temporary workspace."""

from __future__ import annotations

import os

import pytest

from agentao.client.files import LocalFiles, ResourceNotFound, Workspace
from agentao.protocol.errors import InvalidParams


def write(path: str, data: str | bytes) -> None:
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


def is_link(path: str) -> bool:
    return os.path.islink(path)


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "extra").mkdir()
    return Workspace.of("s1", str(tmp_path / "root"), (str(tmp_path / "extra"),))


@pytest.fixture
def root(ws):
    return ws.roots[0]


async def test_read_whole_file(ws, root):
    path = os.path.join(root, "a.txt")
    write(path, "one\ntwo\nthree\n")
    assert await LocalFiles().read_text_file(ws, path, None, None) == "one\ntwo\nthree\n"


@pytest.mark.parametrize(
    ("line", "limit", "expected"),
    [
        (1, 1, "one\n"),
        (2, None, "two\nthree\n"),
        (2, 1, "two\n"),
        (0, 2, "one\ntwo\n"),  # 0 reads from the first line
        (3, 10, "three\n"),
        (9, 1, ""),
        (1, 0, ""),
    ],
)
async def test_read_line_and_limit_are_one_based(ws, root, line, limit, expected):
    path = os.path.join(root, "a.txt")
    write(path, "one\ntwo\nthree\n")
    assert await LocalFiles().read_text_file(ws, path, line, limit) == expected


async def test_crlf_is_kept(ws, root):
    path = os.path.join(root, "crlf.txt")
    write(path, b"a\r\nb\r\n")
    assert await LocalFiles().read_text_file(ws, path, 2, 1) == "b\r\n"


async def test_missing_file_is_empty_by_default(ws, root):
    assert await LocalFiles().read_text_file(ws, os.path.join(root, "new.txt"), None, None) == ""


async def test_missing_file_can_be_an_error(ws, root):
    with pytest.raises(ResourceNotFound) as err:
        await LocalFiles("error").read_text_file(ws, os.path.join(root, "new.txt"), None, None)
    assert err.value.code == -32002
    assert err.value.data == {"path": os.path.join(root, "new.txt")}


async def test_additional_directory_is_allowed(ws):
    path = os.path.join(ws.roots[1], "b.txt")
    await LocalFiles().write_text_file(ws, path, "extra")
    assert await LocalFiles().read_text_file(ws, path, None, None) == "extra"


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "relative.txt", "ROOT/../outside.txt", "ROOT/a\x00b"]
)
async def test_paths_outside_are_refused(ws, root, path):
    path = path.replace("ROOT", root)
    with pytest.raises(InvalidParams) as err:
        await LocalFiles().read_text_file(ws, path, None, None)
    assert err.value.code == -32602
    with pytest.raises(InvalidParams):
        await LocalFiles().write_text_file(ws, path, "x")


async def test_symlink_out_of_the_workspace_is_refused(ws, root, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    os.symlink(secret, os.path.join(root, "link.txt"))
    os.symlink(tmp_path, os.path.join(root, "dirlink"))
    for path in (os.path.join(root, "link.txt"), os.path.join(root, "dirlink", "secret.txt")):
        with pytest.raises(InvalidParams, match="outside"):
            await LocalFiles().read_text_file(ws, path, None, None)
        with pytest.raises(InvalidParams):
            await LocalFiles().write_text_file(ws, path, "overwritten")
    assert secret.read_text() == "secret"


async def test_symlink_inside_is_followed(ws, root):
    target = os.path.join(root, "target.txt")
    write(target, "old")
    os.symlink(target, os.path.join(root, "alias.txt"))
    await LocalFiles().write_text_file(ws, os.path.join(root, "alias.txt"), "new")
    assert is_link(os.path.join(root, "alias.txt"))
    assert read(target) == "new"


async def test_directory_is_refused(ws, root):
    with pytest.raises(InvalidParams, match="directory"):
        await LocalFiles().read_text_file(ws, root, None, None)


async def test_write_creates_parents_and_keeps_mode(ws, root):
    path = os.path.join(root, "deep", "er", "c.sh")
    await LocalFiles().write_text_file(ws, path, "#!/bin/sh\n")
    assert read(path) == "#!/bin/sh\n"
    os.chmod(path, 0o750)
    await LocalFiles().write_text_file(ws, path, "echo hi\n")
    assert read(path) == "echo hi\n"
    assert os.stat(path).st_mode & 0o777 == 0o750
    assert [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".agentao-")] == []


async def test_unicode_round_trip(ws, root):
    path = os.path.join(root, "u.txt")
    await LocalFiles().write_text_file(ws, path, "héllo 世界 🎉\n")
    assert await LocalFiles().read_text_file(ws, path, None, None) == "héllo 世界 🎉\n"


async def test_oversize_read_needs_a_limit(ws, root):
    path = os.path.join(root, "big.txt")
    write(path, "x\n" * 100)
    with pytest.raises(InvalidParams, match="larger"):
        await LocalFiles(max_read_bytes=50).read_text_file(ws, path, None, None)
    assert await LocalFiles(max_read_bytes=50).read_text_file(ws, path, 1, 2) == "x\nx\n"
