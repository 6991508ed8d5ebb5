"""The detect-secrets lane of redaction: Yelp's detect-secrets plugins, run on a message's text.

detect-secrets is made for source files and reports a secret's value, not where it lies, and
its ``scan_line`` rebuilds its settings on every call (about 0.25 ms a line). Here its plugins
are used directly: each regex-based plugin's own patterns (``denylist``) run over the whole text,
so a match gives its span (the capturing group that holds the secret when it is long enough to
be one, else the whole match); the keyword plugin (``password = "..."``, ``api_key: ...``), the
only costly one, runs only on lines naming one of its keywords, and its values are found again
in their line. Left out: the high-entropy string plugins (a commit hash or a UUID is not a
secret), the public IP plugin, and those whose tokens ``patterns`` finds whole (JWTs, private
keys: detect-secrets reports only their first part).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

from mind_core.privacy.patterns import Span

# detect-secrets plugin class -> the kind its findings are redacted as (``[secret:KIND]``)
PLUGIN_KINDS = {
    "ArtifactoryDetector": "artifactory-token",
    "AWSKeyDetector": "aws-key",
    "AzureStorageKeyDetector": "azure-storage-key",
    "BasicAuthDetector": "credential",
    "CloudantDetector": "cloudant-key",
    "DiscordBotTokenDetector": "discord-token",
    "GitHubTokenDetector": "github-token",
    "GitLabTokenDetector": "gitlab-token",
    "IbmCloudIamDetector": "ibm-cloud-key",
    "IbmCosHmacDetector": "ibm-cos-key",
    "KeywordDetector": "credential",
    "MailchimpDetector": "mailchimp-key",
    "NpmDetector": "npm-token",
    "OpenAIDetector": "openai-key",
    "PypiTokenDetector": "pypi-token",
    "SendGridDetector": "sendgrid-key",
    "SlackDetector": "slack-token",
    "SoftlayerDetector": "softlayer-key",
    "SquareOAuthDetector": "square-oauth-secret",
    "StripeDetector": "stripe-key",
    "TelegramBotTokenDetector": "telegram-token",
    "TwilioKeyDetector": "twilio-key",
}
LEFT_OUT = frozenset(
    {"Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector", "JwtTokenDetector", "PrivateKeyDetector"}
)
MIN_GROUP_CHARS = 8  # a shorter capturing group is a prefix (``ghp``), not the secret
MIN_KEYWORD_VALUE_CHARS = 4
MIN_UNQUOTED_CHARS = 6
# detect-secrets picks its keyword patterns by file type: quoted values only in a text file,
# unquoted ones too in a configuration file
TEXT_FILE, CONFIG_FILE = "message.txt", "message.yaml"
EDGE_CHARS = " \t\r\n=:\"'"
# every secret the regex plugins find is a run of 16 or more token characters mixing letters and
# digits, or lies in a URL's credentials: a text without either (most of a chat) is not searched
# by their ~50 patterns
TOKEN_HINT = re.compile(r"[A-Za-z0-9+/=_.-]{16,}|://")


def _token_like(run: str) -> bool:
    """A run of letters and digits mixed (a long word or number alone is not a token), or a URL."""
    return run == "://" or (any(c.isdigit() for c in run) and any(c.isalpha() for c in run))
# the keyword plugin's patterns all need its keyword assigned (``password = x``, ``"api_key": x``)
ASSIGNED = r"[\w\]\[\"'-]{0,30}\s*(?:[:=]|:=|=>)"
# a part of every keyword, assigned: found in the lower-cased text before the plugin's own patterns run
KEYWORD_HINT = re.compile(f"(?:key|pass|pwd|secret|contrase)[a-zñ_]*{ASSIGNED}")


@cache
def _plugins() -> tuple[list[tuple[str, re.Pattern[str]]], Any]:
    """The regex plugins' patterns with their kinds, and the keyword plugin."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.keyword import KeywordDetector

    patterns = []
    for plugin in get_mapping_from_secret_type_to_class().values():
        name = plugin.__name__
        if name in LEFT_OUT or not issubclass(plugin, RegexBasedDetector):
            continue
        kind = PLUGIN_KINDS.get(name, re.sub(r"(?<!^)(?=[A-Z])", "-", name.removesuffix("Detector")).lower())
        patterns.extend((kind, regex) for regex in plugin.denylist)
    return patterns, KeywordDetector()


def _span_of(match: re.Match[str]) -> tuple[int, int]:
    groups = [i for i in range(1, (match.re.groups or 0) + 1) if match.group(i)]
    longest = max(groups, key=lambda i: len(match.group(i)), default=None)
    if longest is not None and len(match.group(longest)) >= MIN_GROUP_CHARS:
        return match.span(longest)
    start, end = match.span()
    while start < end and match.string[start] in EDGE_CHARS:
        start += 1
    while end > start and match.string[end - 1] in EDGE_CHARS:
        end -= 1
    return start, end


def detect_secrets_spans(text: str) -> Iterator[Span]:
    """The secrets detect-secrets' plugins find in ``text``, as ``(kind, start, end)``."""
    patterns, keyword_plugin = _plugins()
    if any(_token_like(run) for run in TOKEN_HINT.findall(text)):
        for kind, regex in patterns:
            for match in regex.finditer(text):
                start, end = _span_of(match)
                if end > start:
                    yield kind, start, end
    if KEYWORD_HINT.search(text.lower()) is None:
        return
    offset = 0
    for line in text.splitlines(keepends=True):
        if KEYWORD_HINT.search(line.lower()):
            for value in _assigned_values(keyword_plugin, line.rstrip("\r\n")):
                for found in re.finditer(re.escape(value), line):
                    yield PLUGIN_KINDS["KeywordDetector"], offset + found.start(), offset + found.end()
        offset += len(line)


def _assigned_values(keyword_plugin: Any, line: str) -> set[str]:
    """The values the keyword plugin finds assigned in a line: quoted ones as it reads a text
    file; unquoted ones (``PASSWORD=...``, ``password: ...``) as it reads a configuration file,
    their first word, kept only when it looks like a secret, letters and digits mixed (not
    "reset" of "password: reset it tomorrow")."""
    values = {s.secret_value or "" for s in keyword_plugin.analyze_line(filename=TEXT_FILE, line=line)}
    for secret in keyword_plugin.analyze_line(filename=CONFIG_FILE, line=line):
        words = (secret.secret_value or "").split()
        value = words[0].rstrip(".,;:)") if words else ""  # ``PASSWORD=x. and then prose``: x
        if len(value) >= MIN_UNQUOTED_CHARS and _token_like(value):
            values.add(value)
    return {v for v in values if len(v) >= MIN_KEYWORD_VALUE_CHARS}
