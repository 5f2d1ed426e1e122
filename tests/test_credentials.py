"""`agentao/credentials.py`: one redaction function for every secret a URL or a log line
carries, and the logging filter that applies it to messages, arguments and tracebacks."""

from __future__ import annotations

import io
import logging

import pytest

from agentao.credentials import REDACTED, RedactSecrets, redact_secrets

R = REDACTED


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("postgresql://u:hunter2@h:5/d?sslmode=require", f"postgresql://{R}@h:5/d?sslmode=require"),
        ("https://ghp_tok@github.com/x.git", f"https://{R}@github.com/x.git"),
        ("postgresql://u:p@ss@h/db", f"postgresql://{R}@h/db"),  # to the last @, as parsers
        ("postgresql://u@h/d?password=hunter2&x=1", f"postgresql://{R}@h/d?password={R}&x=1"),
        (
            "https://h/p?sslmode=require&SSLPASSWORD=z",
            f"https://h/p?sslmode=require&SSLPASSWORD={R}",
        ),
        ("https://h/p?access_token=abc#frag", f"https://h/p?access_token={R}#frag"),
        ("https://h/p?api_key=k&client_secret=s", f"https://h/p?api_key={R}&client_secret={R}"),
        ("https://h/p?token=t;pwd=p", f"https://h/p?token={R}"),  # hides more, never less
        ("host=h password=hunter2 dbname=x", f"host=h password={R} dbname=x"),
        ("password='a b' port=5", f"password={R} port=5"),
        ("user=u password=a&b;c port=5", f"user=u password={R} port=5"),
        ("{'password': 'hunter2', 'user': 'u'}", f"{{'password': '{R}', 'user': 'u'}}"),
        ('error at "postgresql://u:hunter2@h:x/d": bad', f'error at "postgresql://{R}@h:x/d": bad'),
        ("see http://h/x and http://a:b@c/", f"see http://h/x and http://{R}@c/"),
        ("< Authorization: Bearer sk-1", f"< Authorization: {R}"),
        ("bearer sk-1 then", f"bearer {R} then"),
        # what carries no secret is left as it was
        ("https://h/p?sslmode=require&page=2", "https://h/p?sslmode=require&page=2"),
        ("http://[::1]:8080/v1", "http://[::1]:8080/v1"),
        ("https://registry.npmjs.org/@types/node", "https://registry.npmjs.org/@types/node"),
        ("is this a question? yes", "is this a question? yes"),
    ],
)
def test_redact_secrets(text: str, clean: str) -> None:
    assert redact_secrets(text) == clean


def test_the_filter_redacts_arguments_and_tracebacks() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactSecrets())
    log = logging.getLogger("test.credentials")
    log.addHandler(handler)
    log.propagate = False
    try:
        url = "postgresql://u@h/db?password=hunter2"
        log.warning("store at %s (%d tries), %r", url, 3, ValueError(url))
        log.warning("plain postgresql://u:hunter2@h/db")
        try:
            raise RuntimeError(f"cannot open {url}")
        except RuntimeError:
            log.exception("failed")
    finally:
        log.removeHandler(handler)
    out = stream.getvalue()
    assert "hunter2" not in out
    assert "(3 tries)" in out and f"ValueError('postgresql://{R}@h/db?password={R}')" in out
    assert f"RuntimeError: cannot open postgresql://{R}@h/db?password={R}" in out
