"""Secrets leaving through a network command: a check that reads the command, not one regex.

A secret in a curl/wget/nc command line is how tokens are *used* as well as how they are
stolen. It is exfiltration when the secret is sent as data — a body (`-d`, `--data*`,
`--post-data`, `-F`/`--form`, `-T`/`--upload-file`, `@file`), a query parameter, or piped
into nc — or when it goes in a header to a host that did not issue it (a vendor-named
variable such as `$OPENAI_API_KEY` sent anywhere but that vendor's domain, or any secret
sent to a bare IP address). `Authorization: Bearer $TOKEN` to the API the token is for is
normal use and passes.
"""

from __future__ import annotations

import re

__all__ = ["secret_leaves_in_command"]

_NET_TOOL = re.compile(
    r"\b(?:curl|wget|httpie|http|https|nc|ncat|netcat|invoke-webrequest|iwr|scp|rsync)\b", re.I
)
_SECRET_VAR = re.compile(
    r"\$\{?(\w{0,40}(?:key|token|secret|password|passwd|credentials?|pat)\w{0,20})\b\}?", re.I
)
_SECRET_FILE = re.compile(
    r"@?[\w~$/{}.-]{0,80}(?:\.env\b|\.netrc\b|\.pgpass\b|\.npmrc\b|\.pypirc\b|id_(?:rsa|ed25519|ecdsa)\b(?!\.pub\b)"
    r"|\.aws/credentials|\.kube/config\b|\.docker/config\.json|\.git-credentials\b|\.ssh\b(?!/[\w.-]{0,60}\.pub\b))",
    re.I,
)
_DATA_FLAG = re.compile(
    r"(?:^|\s)(?:-d|--data[\w-]{0,12}|--post-data|--post-file|--body-data|-F|--form[\w-]{0,8}|-T|--upload-file)"
    r"(?:=|\s{1,3})\S{0,200}$",
    re.I,
)
_HOST = re.compile(r"https?://([\w.-]{1,253})", re.I)
_IP_HOST = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_VENDORS: dict[str, tuple[str, ...]] = {
    "openai": ("openai.com", "openai.azure.com"),
    "anthropic": ("anthropic.com",),
    "github": ("github.com", "githubusercontent.com"),
    "gh_": ("github.com",),
    "gitlab": ("gitlab.com",),
    "aws": ("amazonaws.com", "aws.amazon.com"),
    "slack": ("slack.com",),
    "stripe": ("stripe.com",),
    "hf_": ("huggingface.co",),
    "huggingface": ("huggingface.co",),
    "google": ("googleapis.com", "google.com"),
    "gemini": ("googleapis.com",),
    "azure": ("azure.com", "windows.net", "microsoft.com"),
}


def _command_lines(text: str) -> list[str]:
    # Split on line breaks and on `;`/`&&` so "cd x && curl ..." is read as its own command.
    return [
        part for line in text.splitlines() for part in re.split(r";|&&|\|\|", line) if _NET_TOOL.search(part)
    ]


def _foreign(var: str, hosts: list[str]) -> bool:
    lowered = var.lower()
    for marker, domains in _VENDORS.items():
        if marker in lowered:
            return not any(h == d or h.endswith("." + d) for h in hosts for d in domains)
    return False


def _sent_as_data(command: str, start: int) -> bool:
    before = command[:start]
    if _DATA_FLAG.search(before):
        return True
    # In a URL's query string: ...?x=$SECRET or &k=${SECRET}
    return re.search(r"[?&][\w.-]{1,40}=[^\s&]{0,40}$", before) is not None


def secret_leaves_in_command(text: str) -> bool:
    """Whether a network command in `text` sends a secret variable or credential file away."""
    for command in _command_lines(text):
        hosts = [h.lower() for h in _HOST.findall(command)]
        to_ip = any(_IP_HOST.match(h) for h in hosts)
        piped_to_nc = re.search(r"\|\s{0,3}(?:nc|ncat|netcat)\b", command, re.I) is not None
        for match in _SECRET_VAR.finditer(command):
            if (
                piped_to_nc
                or to_ip
                or _sent_as_data(command, match.start())
                or _foreign(match.group(1), hosts)
            ):
                return True
        for match in _SECRET_FILE.finditer(command):
            if match.group().startswith("@") or piped_to_nc or _sent_as_data(command, match.start()):
                return True
    return False
