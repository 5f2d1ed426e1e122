"""`agentao/addresses.py`: which addresses are public, in every spelling a URL can use."""

from __future__ import annotations

import pytest

from agentao.addresses import AddressRefused, check_public_url, is_public_address, url_host_port


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("2001:4860:4860::8888", True),
        ("64:ff9b::808:808", True),  # NAT64 of 8.8.8.8
        ("127.0.0.1", False),
        ("::ffff:127.0.0.1", False),  # IPv4-mapped
        ("64:ff9b::7f00:1", False),  # NAT64 of 127.0.0.1
        ("64:ff9b::a00:1", False),  # NAT64 of 10.0.0.1
        ("2002:7f00:1::", False),  # 6to4 of 127.0.0.1
        ("2002:a9fe:a9fe::1", False),  # 6to4 of 169.254.169.254
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", False),  # Teredo, client 127.0.0.1
        ("fe80::1%eth0", False),
    ],
)
def test_is_public_address(address: str, public: bool) -> None:
    assert is_public_address(address) is public


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://localhost:8080/",
        "http://[::1]/",
        "http://0x7f000001/",
        "http://2130706433/",
        "http://017700000001/",
        "http://127.1/",
        "http://0/",
        "http://[::ffff:7f00:1]/",
        "https://10.1.2.3/",
        "ftp://8.8.8.8/",
        "http:///nohost",
    ],
)
async def test_check_public_url_refuses(url: str) -> None:
    with pytest.raises(AddressRefused):
        await check_public_url(url)


async def test_a_public_address_passes() -> None:
    await check_public_url("https://8.8.8.8/mcp")  # a literal: no resolver needed


def test_the_host_is_read_as_the_http_client_reads_it() -> None:
    assert url_host_port("http://user@127.0.0.1:81/x") == ("127.0.0.1", 81)
    assert url_host_port("https://Example.COM/x") == ("example.com", 443)
