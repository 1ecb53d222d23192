"""Label selectors as `kubectl get -l` reads them, for `remediate --selector` (a rack).

The grammar of Kubernetes' labels.Parse: requirements separated by commas, each one of `key`,
`!key`, `key=value`, `key==value`, `key!=value`, `key in (v1,v2)`, `key notin (v1,v2)`,
`key>N`, `key<N`. Keys are an optional DNS-subdomain prefix and a name of at most 63
characters; values at most 63 characters (or empty). Anything else is a SelectorError with one
line saying what is wrong; the selector is evaluated here, over the nodes read, so the scope a
plan shows is the scope it acts on (the plan from a dump too).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_DNS = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
NAME = re.compile(rf"^{_NAME}$")
PREFIX = re.compile(rf"^{_DNS}$")
_SET = re.compile(r"^(?P<key>[^\s!=<>(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_CMP = re.compile(r"^(?P<key>[^\s!=<>(),]+)\s*(?P<op>==|!=|=|<|>)\s*(?P<value>[^\s!=<>(),]*)$")
_EXISTS = re.compile(r"^(?P<neg>!?)\s*(?P<key>[^\s!=<>(),]+)$")


class SelectorError(ValueError):
    """A selector that is not one: the message is one line, for the CLI (exit 2)."""


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # exists | !exists | = | != | in | notin | < | >
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        value = labels.get(self.key, "")
        if self.op == "exists":
            return has
        if self.op == "!exists":
            return not has
        if self.op in ("=", "in"):
            return has and value in self.values
        if self.op in ("!=", "notin"):
            return not has or value not in self.values
        # < and >: the label must be an integer (labels.Requirement.Matches)
        try:
            number = int(value)
        except ValueError:
            return False
        bound = int(self.values[0])
        return has and (number < bound if self.op == "<" else number > bound)


@dataclass(frozen=True)
class Selector:
    text: str
    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return all(r.matches(labels or {}) for r in self.requirements)


def _key(key: str) -> str:
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not PREFIX.match(prefix)):
        raise SelectorError(f"{key!r}: the prefix before '/' must be a DNS subdomain")
    if len(name) > 63 or not NAME.match(name):
        raise SelectorError(
            f"{key!r}: a label key's name is 1-63 letters, digits, '-', '_' or '.', "
            "beginning and ending with a letter or digit"
        )
    return key


def _value(value: str) -> str:
    if value and (len(value) > 63 or not NAME.match(value)):
        raise SelectorError(
            f"{value!r}: a label value is at most 63 letters, digits, '-', '_' or '.', "
            "beginning and ending with a letter or digit"
        )
    return value


def _split(text: str) -> list[str]:
    """The requirements: split at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
            if depth > 1:
                raise SelectorError("nested parentheses")
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError("a ')' without its '('")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise SelectorError("a '(' without its ')'")
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _requirement(part: str) -> Requirement:
    if not part:
        raise SelectorError("an empty requirement (two commas, or one at an end)")
    found = _SET.match(part)
    if found:
        values = [v.strip() for v in found["values"].split(",")]
        if values == [""]:
            raise SelectorError(f"{part!r}: {found['op']} needs at least one value")
        values = [_value(v) for v in values]
        return Requirement(_key(found["key"]), found["op"], tuple(sorted(set(values))))
    found = _CMP.match(part)
    if found:
        op = "=" if found["op"] == "==" else found["op"]
        value = _value(found["value"])
        if op in ("<", ">"):
            try:
                int(value)
            except ValueError:
                raise SelectorError(f"{part!r}: {op} needs an integer value") from None
        return Requirement(_key(found["key"]), op, (value,))
    found = _EXISTS.match(part)
    if found:
        return Requirement(_key(found["key"]), "!exists" if found["neg"] else "exists")
    raise SelectorError(f"{part!r} is not a requirement (key, !key, key=value, key in (a,b), ...)")


def parse(text: str) -> Selector:
    """The selector, or SelectorError. An empty selector would select every node: refused."""
    if not text.strip():
        raise SelectorError("an empty selector would select every node; name the rack's labels")
    if not text.isprintable():
        raise SelectorError("control characters in the selector")
    requirements = tuple(_requirement(part) for part in _split(text))
    return Selector(text, requirements)
