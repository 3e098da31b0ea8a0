"""Kubernetes name rules as small pure checks, returning the user's words or None.
They mirror ``k8s.io/apimachinery/pkg/util/validation``, so the API server would refuse the same
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import re

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
LABEL_VALUE_MAX_LENGTH = 63
LABEL_NAME_MAX_LENGTH = 63

_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _name_error(value: str, pattern: re.Pattern[str], rule: str, max_length: int) -> str | None:
    """The first problem of ``value`` as a name of the syntax ``pattern`` (``rule`` says it in
    words), or None: empty, wrong characters, then too long."""
    if not value:
        return "must not be empty"
    if pattern.fullmatch(value) is None:
        return f"{value!r} {rule}"
    if len(value) > max_length:
        return f"{value!r} is {len(value)} characters long; the limit is {max_length}"
    return None


def dns1035_label_error(value: str, max_length: int = DNS1123_LABEL_MAX_LENGTH) -> str | None:
    """Check a DNS-1035 label: lower-case letters, digits and '-', starting with a letter."""
    rule = (
        "may contain only lower-case letters, digits and '-', "
        "must start with a letter and end with a letter or digit"
    )
    return _name_error(value, _DNS1035_LABEL, rule, max_length)


def dns1123_label_error(value: str) -> str | None:
    """Check a DNS-1123 label (e.g. a namespace name): like DNS-1035 but may start with a digit."""
    rule = (
        "may contain only lower-case letters, digits and '-', "
        "and must start and end with a letter or digit"
    )
    return _name_error(value, _DNS1123_LABEL, rule, DNS1123_LABEL_MAX_LENGTH)


def dns1123_subdomain_error(
    value: str, max_length: int = DNS1123_SUBDOMAIN_MAX_LENGTH
) -> str | None:
    """Check a DNS-1123 subdomain (most object names): dot-separated DNS-1123 labels."""
    rule = (
        "may contain only lower-case letters, digits, '-' and '.', "
        "and must start and end with a letter or digit"
    )
    return _name_error(value, _DNS1123_SUBDOMAIN, rule, max_length)


def label_key_error(key: str) -> str | None:
    """Check a label key: an optional DNS-subdomain prefix and '/', then a name of <= 63 chars."""
    if not key:
        return "a label key must not be empty"
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return f"label key {key!r} has an empty prefix before '/'"
        prefix_error = dns1123_subdomain_error(prefix)
        if prefix_error is not None:
            return f"label key {key!r} has an invalid prefix: {prefix_error}"
    if not name:
        return f"label key {key!r} has an empty name after the prefix"
    return _label_text_error(name, f"label key {key!r}: the name part", LABEL_NAME_MAX_LENGTH)


def label_value_error(value: str) -> str | None:
    """Check a label value: empty, or <= 63 letters, digits, '-', '_', '.' with alnum ends."""
    if value == "":
        return None
    return _label_text_error(value, f"label value {value!r}", LABEL_VALUE_MAX_LENGTH)


def _label_text_error(text: str, subject: str, max_length: int) -> str | None:
    """The problem of ``text`` as a label value or a label key's name part (``subject`` names
    which in the message), or None: wrong characters, then too long."""
    if _LABEL_NAME.fullmatch(text) is None:
        return (
            f"{subject} may contain only letters, digits, '-', '_' and '.', "
            "and must start and end with a letter or digit"
        )
    if len(text) > max_length:
        return f"{subject} is longer than {max_length} characters"
    return None


def is_label_value(value: str) -> bool:
    """Whether ``value`` can be used as a label value as it is."""
    return label_value_error(value) is None


def env_name_error(name: str) -> str | None:
    """Check an environment variable name in C-identifier style (what shells can expand)."""
    if _C_IDENTIFIER.fullmatch(name) is None:
        return (
            f"{name!r} is not a valid variable name "
            "(letters, digits and '_', not starting with a digit)"
        )
    return None
