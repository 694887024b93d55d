"""API keys and their limits: the keys file of `nmt serve --keys FILE` and of `nmt keys`.

The file is JSON: the standard library reads and writes it on every install
(PyYAML comes only with the `train` extra, and Python reads TOML but cannot
write it), `nmt keys` rewrites it without losing anything, and a syntax error
names its line and column. It is made and changed by `nmt keys add|revoke|global`,
and may be edited by hand (the server reloads it; see `serving.quotas`):

    {
      "version": 1,
      "global": {"requests_per_minute": 600, "chars_per_day": 5000000},
      "keys": [
        {"name": "acme", "id": "3f9a0c1e5b7d", "hash": "sha256:<salt hex>:<digest hex>",
         "requests_per_minute": 60, "chars_per_day": 100000,
         "revoked": false, "created": "2025-06-01T12:00:00Z"}
      ]
    }

A limit is a positive integer, or `null` (or left out) for none; `global`
limits all keys of the file together. Unknown fields are refused, so that a
misspelt limit is not silently no limit.

A key reads `nmt_<id>_<secret>`: `id` is 12 hex digits, public, which finds
the key's record (and names it in `nmt keys list`); `secret` is 32 random
bytes in base64url (256 bits). The file keeps `SHA-256(salt || key)` with a
random 16-byte salt per key, never the key, compared in constant time. Not a
slow password hash (scrypt, PBKDF2): those make guessing a *low-entropy*
password costly, but nobody can search 2^256 secrets however fast the hash,
and a KDF tuned to ~50 ms would cost that much CPU on every request (or a
cache of plaintext-equivalent secrets in memory). This is what GitHub and
Stripe-style API tokens do.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import hashlib
import hmac
import json
import re
import secrets
from pathlib import Path

KEYS_FILE_VERSION = 1
TOKEN_PREFIX = "nmt_"
ID_HEX_DIGITS = 12
SECRET_BYTES = 32  # 256 bits; base64url: 43 characters
SALT_BYTES = 16
HASH_SCHEME = "sha256"
_TOKEN = re.compile(rf"{TOKEN_PREFIX}([0-9a-f]{{{ID_HEX_DIGITS}}})_([A-Za-z0-9_-]{{43}})")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# The largest limits the file may set: a requests-per-minute window keeps the time of each
# request (8 bytes), so this bounds its memory (800 kB); a day of characters has no such cost.
MAX_REQUESTS_PER_MINUTE = 100_000
MAX_CHARS_PER_DAY = 10**12
LIMIT_FIELDS = ("requests_per_minute", "chars_per_day")
_MAXIMA = {"requests_per_minute": MAX_REQUESTS_PER_MINUTE, "chars_per_day": MAX_CHARS_PER_DAY}
KEY_FIELDS = ("name", "id", "hash", *LIMIT_FIELDS, "revoked", "created")
TOP_FIELDS = ("version", "global", "keys")
USAGE_SUFFIX = ".usage.json"


def _limit_problem(name: str, value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAXIMA[name]:
        return (f"{name} must be a whole number from 1 to {_MAXIMA[name]}, or null for no "
                f"limit. Received: {name}={value!r}")
    return None


class KeysFileError(ValueError):
    """A keys file that cannot be used; the message names the file, where, and what to fix."""


@dataclasses.dataclass(frozen=True)
class Quota:
    """Limits of one key, or of all keys together (`None`: no limit).

    Attributes:
        requests_per_minute: requests in any 60 seconds.
        chars_per_day: characters of the requests' texts per UTC day.
    """

    requests_per_minute: int | None = None
    chars_per_day: int | None = None

    def __post_init__(self) -> None:
        for name in LIMIT_FIELDS:
            problem = _limit_problem(name, getattr(self, name))
            if problem:
                raise ValueError(problem)

    def to_json(self) -> dict:
        return {name: getattr(self, name) for name in LIMIT_FIELDS}


@dataclasses.dataclass(frozen=True)
class ApiKey:
    """One key's record (never its secret).

    Attributes:
        name: its public name, unique in the file (usage and logs use it).
        id: the public part of the key (`nmt_<id>_...`), unique in the file.
        salt: random bytes hashed before the key.
        digest: `SHA-256(salt || key)`.
        quota: its limits.
        revoked: refused from now on (kept in the file, so its name and
            usage stay known).
        created: when it was made, RFC 3339 in UTC.
    """

    name: str
    id: str
    salt: bytes = dataclasses.field(repr=False)
    digest: bytes = dataclasses.field(repr=False)
    quota: Quota = Quota()
    revoked: bool = False
    created: str = ""

    def matches(self, token: str) -> bool:
        """Whether `token` is this key (constant time in the digest)."""
        return hmac.compare_digest(_digest(self.salt, token), self.digest)

    def to_json(self) -> dict:
        return {"name": self.name, "id": self.id,
                "hash": f"{HASH_SCHEME}:{self.salt.hex()}:{self.digest.hex()}",
                **self.quota.to_json(), "revoked": self.revoked, "created": self.created}


@dataclasses.dataclass(frozen=True)
class KeysFile:
    """The contents of a keys file.

    Attributes:
        keys: the keys, revoked ones included, in file order.
        global_quota: limits of all keys together.
    """

    keys: tuple[ApiKey, ...] = ()
    global_quota: Quota = Quota()

    def by_id(self) -> dict[str, ApiKey]:
        return {key.id: key for key in self.keys}

    def named(self, name: str) -> ApiKey:
        """The key called `name`; KeyError (saying which names exist) if none is."""
        for key in self.keys:
            if key.name == name:
                return key
        have = ", ".join(repr(k.name) for k in self.keys) or "none"
        raise KeyError(f"no key named {name!r} in the file (it has {have})")

    def with_key(self, key: ApiKey) -> KeysFile:
        """This file with `key` added; ValueError if its name or id is taken."""
        if any(k.name == key.name for k in self.keys):
            raise ValueError(f"a key named {key.name!r} exists already (revoked or not): "
                             "choose another name, e.g. for a new key of the same client "
                             f"{key.name}-2, then revoke the old one")
        if any(k.id == key.id for k in self.keys):
            raise ValueError(f"a key with id {key.id} exists already; make another")
        return dataclasses.replace(self, keys=(*self.keys, key))

    def replaced(self, key: ApiKey) -> KeysFile:
        """This file with the key named `key.name` replaced by `key`."""
        self.named(key.name)
        return dataclasses.replace(self, keys=tuple(key if k.name == key.name else k
                                                    for k in self.keys))

    def to_json(self) -> str:
        """The file's text (a key a line group, two-space indent, final newline)."""
        document = {"version": KEYS_FILE_VERSION, "global": self.global_quota.to_json(),
                    "keys": [key.to_json() for key in self.keys]}
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def new_key(name: str, quota: Quota = Quota(), *, now: float | None = None,
            taken_ids: frozenset[str] | set[str] = frozenset()) -> tuple[str, ApiKey]:
    """A new key: `(token to give the client once, record for the file)`.

    Args:
        name: the key's public name (letters, digits, `.`, `_`, `-`; at most 64).
        quota: its limits.
        now: its creation time (seconds since the epoch); now if None.
        taken_ids: ids already in the file (a new id is drawn until it is free).
    """
    problem = _name_problem(name)
    if problem:
        raise ValueError(problem)
    key_id = secrets.token_hex(ID_HEX_DIGITS // 2)
    while key_id in taken_ids:
        key_id = secrets.token_hex(ID_HEX_DIGITS // 2)
    token = f"{TOKEN_PREFIX}{key_id}_{secrets.token_urlsafe(SECRET_BYTES)}"
    salt = secrets.token_bytes(SALT_BYTES)
    return token, ApiKey(name, key_id, salt, _digest(salt, token), quota, False,
                         rfc3339(now if now is not None else _now()))


def token_id(token: str) -> str | None:
    """The id of a well-formed key (`nmt_<id>_<secret>`), else None."""
    match = _TOKEN.fullmatch(token)
    return match.group(1) if match else None


def rfc3339(seconds: float) -> str:
    """`seconds` since the epoch as RFC 3339 in UTC, to the second: `2025-06-01T12:00:00Z`."""
    moment = datetime.datetime.fromtimestamp(int(seconds), datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def usage_path_for(keys_path: str | Path) -> Path:
    """Where the server keeps usage beside a keys file: `keys.json` -> `keys.usage.json`."""
    path = Path(keys_path)
    return path.with_name(path.stem + USAGE_SUFFIX)


def read_keys(path: str | Path) -> KeysFile:
    """The keys file at `path`; KeysFileError saying what to fix if it is not usable."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KeysFileError(f"no keys file at {path}: make one with `nmt keys add NAME "
                            f"--file {path}`") from None
    except UnicodeDecodeError as error:
        raise KeysFileError(f"{path}: not UTF-8 text (byte {error.start}); the keys file is "
                            "JSON written by `nmt keys`") from None
    except OSError as error:
        raise KeysFileError(f"cannot read the keys file {path}: {error.strerror}") from None
    return parse_keys(text, str(path))


def parse_keys(text: str, source: str = "keys file") -> KeysFile:
    """A keys file's contents from its text.

    Args:
        text: the JSON text.
        source: the file's name, for messages.

    Raises:
        KeysFileError: the text is not JSON, or a field is missing, misspelt
            or wrong; the message names the line (of the key's name for a
            key's field) and what to write instead.
    """
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise KeysFileError(f"{source}: line {error.lineno} column {error.colno}: not valid "
                            f"JSON ({error.msg}); fix it (a trailing comma? a missing quote "
                            "or comma?) or make the file again with `nmt keys add`") from None
    if not isinstance(document, dict):
        raise KeysFileError(f'{source}: must be a JSON object {{"version": 1, "keys": [...]}}. '
                            f"Received: a JSON {type(document).__name__}")
    _check_fields(document, TOP_FIELDS, source, "the top level")
    if document.get("version", KEYS_FILE_VERSION) != KEYS_FILE_VERSION:
        raise KeysFileError(f"{source}: version must be {KEYS_FILE_VERSION}. Received: "
                            f"version={document['version']!r}")
    global_record = document.get("global") or {}
    if isinstance(global_record, dict):
        _check_fields(global_record, LIMIT_FIELDS, source, "global")
    global_quota = _quota(global_record, lambda: _located(f"{source}: global",
                                                          _line(text, "global")))
    records = document.get("keys", [])
    if not isinstance(records, list):
        raise KeysFileError(f"{source}: keys must be a JSON array of keys. Received: "
                            f"{type(records).__name__}")
    keys, names, ids = [], {}, {}
    for index, record in enumerate(records):
        key = _key(record, index, text, source)
        if key.name in names:
            raise KeysFileError(
                f"{source}: keys[{index}] ({_line(text, key.name, 2)}): the name {key.name!r} "
                f"is also keys[{names[key.name]}]'s; names must be unique: rename one")
        if key.id in ids:
            raise KeysFileError(
                f"{source}: keys[{index}] ({key.name!r}, {_line(text, key.id, 2)}): the id "
                f"{key.id} is also keys[{ids[key.id]}]'s; remove one of the two and make it anew")
        names[key.name], ids[key.id] = index, index
        keys.append(key)
    return KeysFile(tuple(keys), global_quota)


def _key(record, index: int, text: str, source: str) -> ApiKey:
    if not isinstance(record, dict):
        raise KeysFileError(f"{source}: keys[{index}] must be a JSON object with name, id and "
                            f"hash. Received: {type(record).__name__}")
    name = record.get("name")

    def where() -> str:  # only for an error: finding the line costs a search of the text
        line = _line(text, name) if isinstance(name, str) else ""
        return _located(f"{source}: keys[{index}]", line and f"{name!r}, {line}")

    for field in record:
        if field not in KEY_FIELDS:
            raise KeysFileError(f"{where()}: {_unknown(field, KEY_FIELDS)}")
    for field in ("name", "id", "hash"):
        if field not in record:
            raise KeysFileError(f"{where()}: {field} is missing; every key needs name, id and "
                                "hash (made by `nmt keys add`)")
    problem = _name_problem(name)
    if problem:
        raise KeysFileError(f"{where()}: {problem}")
    key_id = record["id"]
    if not (isinstance(key_id, str) and re.fullmatch(f"[0-9a-f]{{{ID_HEX_DIGITS}}}", key_id)):
        raise KeysFileError(f"{where()}: id must be {ID_HEX_DIGITS} lowercase hex digits, as "
                            f"`nmt keys add` writes. Received: id={key_id!r}")
    salt, digest = _hash(record["hash"], where)
    revoked = record.get("revoked", False)
    if not isinstance(revoked, bool):
        raise KeysFileError(f"{where()}: revoked must be true or false. Received: "
                            f"revoked={revoked!r}")
    created = record.get("created", "")
    if not isinstance(created, str) or (created and not _is_rfc3339(created)):
        raise KeysFileError(f"{where()}: created must be a UTC time like 2025-06-01T12:00:00Z. "
                            f"Received: created={created!r}")
    return ApiKey(name, key_id, salt, digest, _quota(record, where), revoked, created)


def _hash(value, where) -> tuple[bytes, bytes]:
    parts = value.split(":") if isinstance(value, str) else []
    try:
        if len(parts) != 3 or parts[0] != HASH_SCHEME:
            raise ValueError
        salt, digest = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
        if len(salt) < SALT_BYTES or len(digest) != hashlib.sha256().digest_size:
            raise ValueError
    except ValueError:
        raise KeysFileError(
            f"{where()}: hash must be '{HASH_SCHEME}:<salt, 32 hex digits>:<digest, 64 hex "
            f"digits>' as `nmt keys add` writes it (the key itself is never stored). "
            f"Received: hash={str(value)[:24]!r}...; make the key anew") from None
    return salt, digest


def _quota(record, where) -> Quota:
    """The limits of `record`; `where()` says where it is, for errors."""
    if not isinstance(record, dict):
        raise KeysFileError(f"{where()} must be a JSON object with requests_per_minute and "
                            f"chars_per_day. Received: {type(record).__name__}")
    for name in LIMIT_FIELDS:
        problem = _limit_problem(name, record.get(name))
        if problem:
            raise KeysFileError(f"{where()}: {problem}")
    return Quota(**{name: record.get(name) for name in LIMIT_FIELDS})


def _name_problem(name) -> str | None:
    if isinstance(name, str) and _NAME.fullmatch(name):
        return None
    return ("a key's name must be 1 to 64 letters, digits, '.', '_' or '-', starting with a "
            f"letter or digit. Received: name={name!r}")


def _check_fields(record: dict, known: tuple[str, ...], source: str, where: str) -> None:
    for field in record:
        if field not in known:
            raise KeysFileError(f"{source}: {where}: {_unknown(field, known)}")


def _unknown(field, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(str(field), known, n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known)}"
    return f"unknown field {field!r}; {hint}"


def _located(where: str, line: str) -> str:
    return f"{where} ({line})" if line else where


def _line(text: str, value: str, nth: int = 1) -> str:
    """`line N` of the `nth` occurrence of the JSON string `value` in `text`, or ''."""
    needle, start = json.dumps(value, ensure_ascii=False), -1
    for _ in range(nth):
        start = text.find(needle, start + 1)
        if start < 0:
            return "" if nth == 1 else _line(text, value)
    return f"line {text.count(chr(10), 0, start) + 1}"


def _is_rfc3339(value: str) -> bool:
    try:
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _digest(salt: bytes, token: str) -> bytes:
    return hashlib.sha256(salt + token.encode("utf-8")).digest()


def _now() -> float:
    return datetime.datetime.now(datetime.UTC).timestamp()


# --- the usage file: what each key used today, saved by the server -------------------------

USAGE_FILE_VERSION = 1


@dataclasses.dataclass
class Usage:
    """What a key (or all keys together) used on one UTC day.

    Attributes:
        requests: requests admitted.
        chars: characters admitted (given back for calls that ended in an error).
        rejected: requests refused at a limit.
        last_used: when a request was last admitted (seconds since the epoch; kept
            across days), or None.
    """

    requests: int = 0
    chars: int = 0
    rejected: int = 0
    last_used: float | None = None

    def to_json(self) -> dict:
        return {"requests": self.requests, "chars": self.chars, "rejected": self.rejected,
                "last_used": None if self.last_used is None else rfc3339(self.last_used)}

    @classmethod
    def from_json(cls, record: dict) -> Usage:
        last_used = record.get("last_used")
        if last_used is not None:
            last_used = datetime.datetime.fromisoformat(
                last_used.replace("Z", "+00:00")).timestamp()
        return cls(*(int(record.get(field, 0)) for field in ("requests", "chars", "rejected")),
                   last_used)


@dataclasses.dataclass(frozen=True)
class UsageFile:
    """The usage file's contents.

    Attributes:
        day: the UTC day the counts are of, `YYYY-MM-DD`.
        saved: when the server wrote it, RFC 3339.
        global_usage: all keys together.
        keys: each key's, by name.
    """

    day: str
    saved: str
    global_usage: Usage
    keys: dict[str, Usage]

    def to_json(self) -> str:
        document = {"version": USAGE_FILE_VERSION, "day": self.day, "saved": self.saved,
                    "global": self.global_usage.to_json(),
                    "keys": {name: usage.to_json() for name, usage in sorted(self.keys.items())}}
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def read_usage(path: str | Path) -> UsageFile:
    """The usage file at `path`; ValueError (naming the file) if it is not one."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        if document.get("version") != USAGE_FILE_VERSION:
            raise ValueError(f"version {document.get('version')!r}, not {USAGE_FILE_VERSION}")
        datetime.date.fromisoformat(document["day"])
        return UsageFile(document["day"], document.get("saved", ""),
                         Usage.from_json(document.get("global", {})),
                         {str(name): Usage.from_json(record)
                          for name, record in document.get("keys", {}).items()})
    except FileNotFoundError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path} is not a usage file of `nmt serve --keys` ({error})") from None
