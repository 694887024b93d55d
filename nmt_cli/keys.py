"""`nmt keys`: the API keys of `nmt serve --keys FILE` (the file's format: `serving.keys`).

    nmt keys add NAME --file KEYS [--requests-per-minute N] [--chars-per-day N]
    nmt keys list --file KEYS
    nmt keys revoke NAME --file KEYS
    nmt keys global --file KEYS [--requests-per-minute N|none] [--chars-per-day N|none]
    nmt keys usage --file KEYS [--usage FILE]

`add` prints the new key once, alone on standard output (`KEY=$(nmt keys add
...)`): the file keeps only its hash. The file is replaced atomically, so a
running server reads the old or the new version, and picks up the new one at
its next poll. Run one `nmt keys` at a time on a file: two at once may lose
one's change.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

from nmt_cli.files import write_atomically


def add_keys_parser(sub) -> None:
    """Registers `keys` on the `nmt` command's subparsers."""
    p = sub.add_parser("keys", help="make, list and revoke the API keys of `nmt serve --keys`, "
                                    "and show their usage")
    actions = p.add_subparsers(dest="keys_action", required=True)
    add = actions.add_parser("add", help="make a key (printed once: the file keeps its hash)")
    add.add_argument("name", help="the key's public name (letters, digits, . _ -), e.g. the "
                                  "client's; shown in usage and logs")
    _add_limits(add, "the key's", none_word=False)
    listing = actions.add_parser("list", help="the keys, their limits and state")
    revoke = actions.add_parser("revoke", help="refuse a key from the server's next poll on "
                                               "(PERMISSION_DENIED, HTTP 403)")
    revoke.add_argument("name", help="the key's name")
    limits = actions.add_parser("global", help="set the limits of all keys together")
    _add_limits(limits, "all keys' together", none_word=True)
    usage = actions.add_parser("usage", help="what each key used today (UTC), as the server "
                                             "last saved it")
    usage.add_argument("--usage", type=Path, metavar="FILE",
                       help="the server's usage file (default: beside KEYS, keys.usage.json "
                            "for keys.json; `nmt serve --keys-usage`)")
    for action in (add, listing, revoke, limits, usage):
        made = " (made if missing)" if action in (add, limits) else ""
        action.add_argument("--file", type=Path, required=True, metavar="KEYS",
                            help=f"the keys file of `nmt serve --keys`{made}")
    p.set_defaults(func=keys_command)


def _add_limits(p, whose: str, none_word: bool) -> None:
    kind = _limit_or_none if none_word else _limit
    unset = "; `none` for no limit, left out: unchanged" if none_word else " (default: none)"
    p.add_argument("--requests-per-minute", type=kind, metavar="N",
                   help=f"{whose} requests in any 60 seconds{unset}")
    p.add_argument("--chars-per-day", type=kind, metavar="N",
                   help=f"{whose} characters per UTC day{unset}")


def _limit(value: str) -> int:
    from serving.keys import MAX_CHARS_PER_DAY

    try:
        number = int(value)
    except ValueError:
        number = 0
    if not 1 <= number <= MAX_CHARS_PER_DAY:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1. Received: {value!r}")
    return number


def _limit_or_none(value: str):
    return _Unlimited if value.lower() == "none" else _limit(value)


_Unlimited = object()  # `none` on the command line: remove the limit


def keys_command(args) -> int:
    return {"add": _add, "list": _list, "revoke": _revoke, "global": _global,
            "usage": _usage}[args.keys_action](args)


def _read(path: Path, missing_ok: bool = False):
    from serving.keys import KeysFile, read_keys

    if missing_ok and not path.exists():
        if not path.parent.is_dir():
            raise FileNotFoundError(f"no directory {path.parent} to write {path.name} in")
        return KeysFile()
    return read_keys(path)


def _write(path: Path, keys_file) -> None:
    write_atomically(path, keys_file.to_json().encode("utf-8"))


def _add(args) -> int:
    from serving.keys import Quota, new_key

    keys_file = _read(args.file, missing_ok=True)
    quota = Quota(args.requests_per_minute, args.chars_per_day)
    token, key = new_key(args.name, quota, taken_ids={k.id for k in keys_file.keys})
    _write(args.file, keys_file.with_key(key))
    print(token)
    print(f"nmt keys: added {key.name!r} (id {key.id}, {_limits(quota)}) to {args.file}. The "
          "key above is shown only now: give it to its client; calls send it as "
          "`authorization: Bearer <key>` or `x-api-key: <key>`.", file=sys.stderr)
    return 0


def _list(args) -> int:
    keys_file = _read(args.file)
    rows = [("name", "id", "state", "requests/min", "chars/day", "created")]
    rows += [(k.name, k.id, "revoked" if k.revoked else "active",
              _number(k.quota.requests_per_minute), _number(k.quota.chars_per_day), k.created)
             for k in keys_file.keys]
    _print_table(rows)
    print(f"global: {_limits(keys_file.global_quota)}")
    return 0


def _revoke(args) -> int:
    import dataclasses

    keys_file = _read(args.file)
    try:
        key = keys_file.named(args.name)
    except KeyError as error:
        raise ValueError(error.args[0]) from None
    if key.revoked:
        print(f"nmt keys: {key.name!r} was revoked already", file=sys.stderr)
        return 0
    _write(args.file, keys_file.replaced(dataclasses.replace(key, revoked=True)))
    print(f"nmt keys: revoked {key.name!r} (id {key.id}); a running server refuses it from "
          "its next poll of the file (--poll-interval)", file=sys.stderr)
    return 0


def _global(args) -> int:
    import dataclasses

    from serving.keys import LIMIT_FIELDS

    keys_file = _read(args.file, missing_ok=True)
    changes = {name: None if value is _Unlimited else value
               for name in LIMIT_FIELDS if (value := getattr(args, name)) is not None}
    if not changes:
        raise ValueError("give --requests-per-minute and/or --chars-per-day (a number, or "
                         "`none` for no limit)")
    quota = dataclasses.replace(keys_file.global_quota, **changes)
    _write(args.file, dataclasses.replace(keys_file, global_quota=quota))
    print(f"nmt keys: global limits of {args.file}: {_limits(quota)}", file=sys.stderr)
    return 0


def _usage(args) -> int:
    from serving.keys import Usage, read_usage, usage_path_for

    keys_file = _read(args.file)
    path = args.usage or usage_path_for(args.file)
    try:
        saved = read_usage(path)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no usage file at {path}: the server writes it at its first poll after a "
            "request (nmt serve --keys); or name it with --usage FILE") from None
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    old = saved.day != today
    rows = [("name", "state", "requests", "rejected", "chars", "chars/day", "requests/min",
             "last used")]
    names = [k.name for k in keys_file.keys] + sorted(
        set(saved.keys) - {k.name for k in keys_file.keys})
    quotas = {k.name: k for k in keys_file.keys}
    for name in names:
        used, key = saved.keys.get(name, Usage()), quotas.get(name)
        state = "removed" if key is None else "revoked" if key.revoked else "active"
        rows.append((name, state, *_counts(used, old),
                     _number(key.quota.chars_per_day) if key else "-",
                     _number(key.quota.requests_per_minute) if key else "-",
                     used.to_json()["last_used"] or "never"))
    rows.append(("(all)", "", *_counts(saved.global_usage, old),
                 _number(keys_file.global_quota.chars_per_day),
                 _number(keys_file.global_quota.requests_per_minute), ""))
    print(f"usage of {today} (UTC) from {path}, saved by the server at {saved.saved}"
          + (f"; nothing since {saved.day}" if old else ""))
    _print_table(rows)
    return 0


def _counts(usage, old: bool) -> tuple[str, str, str]:
    """Today's requests, rejected and characters (0 if the file is of an earlier day)."""
    return ("0", "0", "0") if old else (str(usage.requests), str(usage.rejected),
                                        str(usage.chars))


def _limits(quota) -> str:
    """E.g. `60 requests per minute, no limit on characters per day`."""
    return ", ".join(f"no limit on {what}" if value is None else f"{_number(value)} {what}"
                     for value, what in ((quota.requests_per_minute, "requests per minute"),
                                         (quota.chars_per_day, "characters per day")))


def _number(value: int | None) -> str:
    return "no limit" if value is None else f"{value:,}".replace(",", " ")


def _print_table(rows: list[tuple]) -> None:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))
              .rstrip())
