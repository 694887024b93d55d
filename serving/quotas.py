"""API keys at work (`nmt serve --keys FILE`): who calls, and how much they may.

`Quotas` holds the keys of a keys file (`serving.keys`) and what each used.
gRPC calls go through `serving.interceptors.KeyInterceptor`; HTTP routes call
`authenticate` before reading the body and `admit` once it is parsed. Health,
readiness, reflection, the page and the OpenAPI description need no key.

Statuses, as gRPC defines them (UNAUTHENTICATED: the caller cannot be
identified; PERMISSION_DENIED: it is, and may not do this):

- no key, a malformed key, a key the file does not have (or a wrong secret):
  UNAUTHENTICATED, HTTP 401;
- a revoked key: PERMISSION_DENIED, HTTP 403;
- over a limit: RESOURCE_EXHAUSTED, HTTP 429, with the whole seconds until the
  request would pass as `retry-after` (gRPC trailing metadata) or
  `Retry-After` (HTTP header);
- a request with more characters than a daily limit allows at all:
  RESOURCE_EXHAUSTED, HTTP 413, no retry-after (it would never pass).

Limits, per key and for all keys of the file together (`global`):

- requests per minute: at most N requests in any 60 seconds, exactly (the
  times of the last N requests in a ring: O(1) a request, 8 bytes a slot).
  Each message of a request stream counts as a request.
- characters per UTC day: the characters (code points) of a request's texts,
  `request_chars`: sentences or documents (markup included), or Align's
  sources and targets. A request that would pass the limit is refused whole,
  until 00:00 UTC; it is never cut.

A request is checked against all four limits before anything is recorded, so
a refused request uses nothing. An admitted request counts in requests per
minute whatever its outcome (the server did the work of reading it); the
characters of a call that ends in an error are given back (`Charge.refund`),
so a client is not charged for a queue that was full or a model not loaded.

Concurrency: every method but the file reading and writing runs on the
server's event loop, which gRPC interceptors and aiohttp handlers share; none
awaits between checking a limit and recording the use. So concurrent requests
of one key are checked one after the other and cannot together pass a limit,
without a lock. `refresh` and `save_usage` read and write files in a worker
thread and apply the result on the loop.

The keys file is read at start (a bad file refuses to start, `KeysFileError`)
and, by `keep_fresh`, again when it changes: a bad version is logged once with
what to fix and the keys loaded before stay in use. A key revoked or removed
is refused from its next request (the next message of a stream too). Usage
is kept by key name in memory and saved every poll to the usage file (beside
the keys file by default), so a restart does not reset the day's counts; one
server process per usage file (several replicas each enforce their own limits).
"""

from __future__ import annotations

import array
import asyncio
import contextvars
import dataclasses
import datetime
import json
import logging
import math
import time
from pathlib import Path

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge

from nmt.atomic_write import write_atomically
from serving.errors import LimitExceeded, ServingError, Unauthenticated
from serving.keys import (
    ApiKey,
    KeysFile,
    KeysFileError,
    Usage,
    UsageFile,
    read_keys,
    read_usage,
    rfc3339,
    token_id,
)

log = logging.getLogger("nmt.serving.keys")

API_KEY_HEADER = "x-api-key"  # gRPC metadata key and HTTP header, beside `authorization`
BEARER = "bearer"  # the `authorization` scheme (case-insensitive, RFC 9110)
RETRY_AFTER_KEY = "retry-after"  # gRPC trailing metadata: whole seconds
PERIOD_S = 60.0
DAY_S = 86_400
REJECTION_REASONS = ("requests_per_minute", "chars_per_day", "global_requests_per_minute",
                     "global_chars_per_day")
AUTH_FAILURES = ("missing", "invalid", "revoked")
_TEXT_FIELDS = ("sentences", "sources", "targets")
# RPCs admitted once per call, however many messages their request stream has, and charged
# their characters by the servicer once it has read them (a file's, `Meter`).
METERED_BY_SERVICER = frozenset({"TranslateFile"})


class PermissionDenied(ServingError):
    """The key is known and may not call: it was revoked."""

    code = grpc.StatusCode.PERMISSION_DENIED
    http_status = 403


class QuotaExceeded(LimitExceeded):
    """Over a key's (or the global) limit for now; may pass after `retry_after` seconds.

    Args:
        message: what was exceeded, and when to retry.
        retry_after: seconds until the request would pass.
    """

    http_status = 429

    def __init__(self, message: str, retry_after: float):
        super().__init__(message)
        self.retry_after = retry_after

    @property
    def retry_after_s(self) -> int:
        """`retry_after` in whole seconds, at least 1 (the `Retry-After` header's value)."""
        return _whole_seconds(self.retry_after)

    @property
    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        """What the gRPC status carries (`serving.interceptors.RequestInterceptor`)."""
        return ((RETRY_AFTER_KEY, str(self.retry_after_s)),)


class Clock:
    """Real time: `monotonic()` for the minute windows, `wall()` for the UTC day."""

    monotonic = staticmethod(time.monotonic)
    wall = staticmethod(time.time)


class KeyMetrics:
    """Metrics of keys and quotas; labels are bounded (never a key's name).

    Args:
        registry: where to register them (the server's `ServingMetrics.registry`).
    """

    def __init__(self, registry: CollectorRegistry | None = None):
        r = registry if registry is not None else CollectorRegistry()
        self.rejections = Counter(
            "nmt_quota_rejections", "Requests refused at a limit of the keys file, by reason "
            f"({', '.join(REJECTION_REASONS)}).", ["reason"], registry=r)
        self.auth_failures = Counter(
            "nmt_auth_failures", "Calls refused for their API key, by reason "
            f"({', '.join(AUTH_FAILURES)}).", ["reason"], registry=r)
        self.loads = Counter(
            "nmt_keys_file_loads", "Keys file loads, by result (success, failure).",
            ["result"], registry=r)
        self.keys = Gauge("nmt_api_keys", "Keys in the keys file, by state (active, revoked).",
                          ["state"], registry=r)
        for reason in REJECTION_REASONS:
            self.rejections.labels(reason=reason)
        for reason in AUTH_FAILURES:
            self.auth_failures.labels(reason=reason)
        for result in ("success", "failure"):
            self.loads.labels(result=result)


class SlidingWindow:
    """At most `limit` events in any `period_s` seconds: the last `limit` event times, in a ring.

    Args:
        limit: events allowed per period.
        period_s: the period.
        times: earlier event times, oldest first (the last `limit` are kept).
    """

    def __init__(self, limit: int, period_s: float = PERIOD_S, times=()):
        self.limit, self.period_s = limit, period_s
        self._times = array.array("d", [-math.inf]) * limit  # -inf: a free slot
        self._next = 0  # the oldest slot, overwritten by the next event
        for moment in list(times)[-limit:]:
            self.record(moment)

    def wait(self, now: float) -> float:
        """Seconds until an event may happen (0: now)."""
        return max(0.0, self._times[self._next] + self.period_s - now)

    def record(self, now: float) -> None:
        self._times[self._next] = now
        self._next = (self._next + 1) % self.limit

    def times(self) -> list[float]:
        """The recorded event times, oldest first."""
        ring = self._times[self._next:] + self._times[:self._next]
        return [moment for moment in ring if moment != -math.inf]

    def resized(self, limit: int) -> SlidingWindow:
        """A window of `limit` events keeping this one's most recent times."""
        return SlidingWindow(limit, self.period_s, self.times())


@dataclasses.dataclass
class Charge:
    """What one admitted request used; `refund()` gives its characters back, once.

    As a context manager, it refunds when the block raises (the call failed):

        with quotas.admit(key, request_chars(request)):
            return await translate(request)

    Attributes:
        key: the key's name.
        chars: characters charged (0 once refunded).
        day: the UTC day they were charged to.
    """

    key: str
    chars: int
    day: str
    _quotas: Quotas = dataclasses.field(repr=False)

    def refund(self) -> None:
        if self.chars:
            self._quotas._refund(self)
            self.chars = 0

    def __enter__(self) -> Charge:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if error is not None:
            self.refund()


class Meter:
    """Charges the characters of a call admitted before they were known: a file's, once
    the servicer has read it (`Quotas.charge_more`). Call `charge` on the event loop.

    Args:
        quotas: the keys and their usage.
        key: the call's key (admitted already).
    """

    def __init__(self, quotas: Quotas, key: ApiKey):
        self._quotas, self._key = quotas, key
        self._charges: list[Charge] = []

    def charge(self, chars: int) -> None:
        """Charges `chars` more; raises (charging nothing) past a daily limit."""
        self._charges.append(self._quotas.charge_more(self._key, chars))

    def refund(self) -> None:
        """Gives back everything charged (the call failed)."""
        for charge in self._charges:
            charge.refund()


# The `Meter` of the call being served (`METERED_BY_SERVICER`), set by
# `serving.interceptors.KeyInterceptor` in the call's task; None without keys.
CALL_METER: contextvars.ContextVar[Meter | None] = contextvars.ContextVar(
    "nmt_call_meter", default=None)


def request_chars(message) -> int:
    """Characters a request brings: its sentences or documents, or Align's sources and targets."""
    return sum(len(text) for field in _TEXT_FIELDS for text in getattr(message, field, ()))


class Quotas:
    """The keys of a keys file, and each key's usage against its limits.

    Args:
        path: the keys file (`serving.keys`).
        usage_path: where usage is saved (read at start if it is of today, UTC);
            None: kept in memory only.
        metrics: where to count rejections and loads; None: not counted.
        clock: has `monotonic()` and `wall()`; `Clock()` (real time) if None.

    Raises:
        KeysFileError: the keys file is missing or not valid (the message
            says what to fix); the server does not start.
    """

    def __init__(self, path: str | Path, *, usage_path: str | Path | None = None,
                 metrics: KeyMetrics | None = None, clock=None):
        self.path = Path(path)
        self.usage_path = None if usage_path is None else Path(usage_path)
        self._metrics, self._clock = metrics, clock if clock is not None else Clock()
        self._stamp = _stamp(self.path)
        self._use(read_keys(self.path))
        self._failed_stamp: object = None
        self._windows: dict[str, SlidingWindow] = {}  # by key name
        self._global_window: SlidingWindow | None = None
        self._day = self._today()
        self._usage: dict[str, Usage] = {}
        self._global_usage = Usage()
        self._dirty = False  # usage changed since it was last saved
        self._save_failed = False
        self._read_saved_usage()

    @property
    def keys_file(self) -> KeysFile:
        return self._file

    # --- who calls ---------------------------------------------------------------------------

    def authenticate(self, authorization: str | None, api_key: str | None,
                     carrier: str = "metadata") -> ApiKey:
        """The key a call carries, as `authorization: Bearer <key>` or `x-api-key: <key>`.

        Args:
            authorization: the `authorization` value, or None.
            api_key: the `x-api-key` value, or None.
            carrier: "metadata" (gRPC) or "header" (HTTP), for messages.

        Raises:
            Unauthenticated: no key, not a key, or not a key of this file.
            PermissionDenied: a revoked key.
        """
        token = self._token(authorization, api_key, carrier)
        key_id = token_id(token)
        key = self._by_id.get(key_id) if key_id is not None else None
        if key is None or not key.matches(token):
            self._auth_failure("invalid")
            raise Unauthenticated(
                "the API key is not valid for this server: check that it was copied whole "
                "(nmt_<12 hex digits>_<43 characters>), or ask the operator for one")
        if key.revoked:
            self._auth_failure("revoked")
            raise PermissionDenied(f"the API key {key.name!r} was revoked; ask the operator "
                                   "for a new one")
        return key

    def _token(self, authorization: str | None, api_key: str | None, carrier: str) -> str:
        bearer = None
        if authorization:
            scheme, _, value = str(authorization).strip().partition(" ")
            if scheme.lower() != BEARER or not value.strip():
                self._auth_failure("invalid")
                raise Unauthenticated(f"the authorization {carrier} must read `Bearer <key>`. "
                                      f"Received: a {scheme[:20]!r} value")
            bearer = value.strip()
        given = str(api_key).strip() if api_key else None
        if bearer and given and bearer != given:
            self._auth_failure("invalid")
            raise Unauthenticated(f"the authorization and {API_KEY_HEADER} {carrier}s carry "
                                  "different keys; send one")
        if not (bearer or given):
            self._auth_failure("missing")
            raise Unauthenticated(
                f"this server needs an API key: send the {carrier} `authorization: Bearer "
                f"<key>` or `{API_KEY_HEADER}: <key>` (the operator makes keys with "
                "`nmt keys add`)")
        return bearer or given

    def _current(self, key: ApiKey) -> ApiKey:
        """`key` as the file has it now: refused if it was revoked or removed since."""
        current = self._by_id.get(key.id)
        if current is None or current.digest != key.digest:
            self._auth_failure("invalid")
            raise Unauthenticated(f"the API key {key.name!r} is no longer a key of this "
                                  "server; ask the operator for a new one")
        if current.revoked:
            self._auth_failure("revoked")
            raise PermissionDenied(f"the API key {key.name!r} was revoked; ask the operator "
                                   "for a new one")
        return current

    def _auth_failure(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.auth_failures.labels(reason=reason).inc()

    # --- how much ----------------------------------------------------------------------------

    def admit(self, key: ApiKey, chars: int = 0) -> Charge:
        """Admits one request of `key` with `chars` characters, or refuses it whole.

        Checks that the key is still valid, then the key's and the global
        requests per minute and characters per day, all before recording any;
        records the request only if all pass. Call it on the event loop.

        Returns:
            The charge (`refund()` it if the call then fails).

        Raises:
            Unauthenticated, PermissionDenied: the key was removed or revoked.
            QuotaExceeded: over a limit now; `retry_after` says for how long.
            LimitExceeded: more characters than a daily limit allows at all.
        """
        key = self._current(key)
        now, wall = self._clock.monotonic(), self._clock.wall()
        self._roll(self._today())
        usage = self._usage.setdefault(key.name, Usage())
        try:
            self._check_rate(key, now)
            self._check_chars(key, chars, usage, wall)
        except LimitExceeded:
            usage.rejected += 1
            self._global_usage.rejected += 1
            self._dirty = True
            raise
        for window in (self._window(key), self._global()):
            if window is not None:
                window.record(now)
        for counted in (usage, self._global_usage):
            counted.requests += 1
            counted.chars += chars
            counted.last_used = wall
        self._dirty = True
        return Charge(key.name, chars, self._day, self)

    def charge_more(self, key: ApiKey, chars: int) -> Charge:
        """Charges `chars` characters to a request of `key` admitted already (whose
        characters were not known then: a file's), against the daily limits only; it
        counts no request. Call it on the event loop.

        Returns:
            The charge (`refund()` it if the call then fails).

        Raises:
            Unauthenticated, PermissionDenied: the key was removed or revoked since.
            QuotaExceeded, LimitExceeded: as for `admit`.
        """
        key = self._current(key)
        self._roll(self._today())
        usage = self._usage.setdefault(key.name, Usage())
        try:
            self._check_chars(key, chars, usage, self._clock.wall())
        except LimitExceeded:
            usage.rejected += 1
            self._global_usage.rejected += 1
            self._dirty = True
            raise
        for counted in (usage, self._global_usage):
            counted.chars += chars
        self._dirty = True
        return Charge(key.name, chars, self._day, self)

    def _check_rate(self, key: ApiKey, now: float) -> None:
        waits = []
        for window, reason, whose in ((self._window(key), "requests_per_minute",
                                       f"the key {key.name!r}"),
                                      (self._global(), "global_requests_per_minute",
                                       "this server, for all keys together,")):
            wait = window.wait(now) if window is not None else 0.0
            if wait > 0:
                waits.append((wait, reason, f"{whose} is at its limit of {window.limit} "
                                            "requests per minute"))
        if waits:
            wait, reason, what = max(waits)
            self._reject(reason)
            raise QuotaExceeded(f"{what}; retry in {_whole_seconds(wait)} s", wait)

    def _check_chars(self, key: ApiKey, chars: int, usage: Usage, wall: float) -> None:
        for limit, used, reason, whose in (
                (key.quota.chars_per_day, usage.chars, "chars_per_day", f"the key {key.name!r}"),
                (self._file.global_quota.chars_per_day, self._global_usage.chars,
                 "global_chars_per_day", "this server, for all keys together,")):
            if limit is None:
                continue
            if chars > limit:
                self._reject(reason)
                raise LimitExceeded(
                    f"this request has {chars} characters, more than {whose} may send in a "
                    f"day ({limit}); send it in smaller requests")
            if used + chars > limit:
                self._reject(reason)
                until_midnight = DAY_S - wall % DAY_S
                raise QuotaExceeded(
                    f"{whose} has {limit - used} of its {limit} characters a day left "
                    f"(UTC) and this request has {chars}; nothing of it was translated. "
                    f"The count starts again at 00:00 UTC, in {_whole_seconds(until_midnight)} s",
                    until_midnight)

    def _reject(self, reason: str) -> None:
        if self._metrics is not None:
            self._metrics.rejections.labels(reason=reason).inc()

    def _window(self, key: ApiKey) -> SlidingWindow | None:
        limit = key.quota.requests_per_minute
        if limit is None:
            self._windows.pop(key.name, None)
            return None
        window = self._windows.get(key.name)
        if window is None or window.limit != limit:  # new, or its limit changed in the file
            window = self._windows[key.name] = (
                SlidingWindow(limit) if window is None else window.resized(limit))
        return window

    def _global(self) -> SlidingWindow | None:
        limit = self._file.global_quota.requests_per_minute
        if limit is None:
            self._global_window = None
        elif self._global_window is None or self._global_window.limit != limit:
            self._global_window = (SlidingWindow(limit) if self._global_window is None
                                   else self._global_window.resized(limit))
        return self._global_window

    def _refund(self, charge: Charge) -> None:
        if charge.day != self._day:  # charged to a day that is over
            return
        for usage in (self._usage.get(charge.key), self._global_usage):
            if usage is not None:
                usage.chars = max(0, usage.chars - charge.chars)
        self._dirty = True

    def _today(self) -> str:
        return datetime.datetime.fromtimestamp(self._clock.wall(), datetime.UTC).date().isoformat()

    def _roll(self, today: str) -> None:
        """At the first request of a new UTC day, every day's count starts again."""
        if today == self._day:
            return
        self._day = today
        self._usage = {name: Usage(last_used=u.last_used) for name, u in self._usage.items()}
        self._global_usage = Usage(last_used=self._global_usage.last_used)
        self._dirty = True

    # --- usage -------------------------------------------------------------------------------

    def usage(self) -> UsageFile:
        """Today's usage (UTC), of every key that has some: what the usage file holds."""
        self._roll(self._today())
        return UsageFile(self._day, rfc3339(self._clock.wall()),
                         dataclasses.replace(self._global_usage),
                         {name: dataclasses.replace(u) for name, u in self._usage.items()})

    async def save_usage(self) -> None:
        """Writes the usage file if usage changed since; a failure is logged once."""
        if self.usage_path is None or not self._dirty:
            return
        data = self.usage().to_json().encode()
        self._dirty = False
        try:
            await asyncio.to_thread(write_atomically, self.usage_path, data)
        except OSError as error:
            self._dirty = True
            if not self._save_failed:
                log.warning(json.dumps({
                    "event": "keys_usage_save_failed", "usage_file": str(self.usage_path),
                    "error": str(error), "hint": "usage is kept in memory; a restart resets "
                    "today's counts. Point --keys-usage at a writable file"}))
            self._save_failed = True
        else:
            self._save_failed = False

    def _read_saved_usage(self) -> None:
        if self.usage_path is None or not self.usage_path.exists():
            return
        try:
            saved = read_usage(self.usage_path)
        except ValueError as error:
            log.warning(json.dumps({"event": "keys_usage_unreadable", "error": str(error),
                                    "hint": "today's counts start at zero"}))
            return
        for name, usage in saved.keys.items():
            self._usage[name] = usage if saved.day == self._day else Usage(
                last_used=usage.last_used)
        if saved.day == self._day:
            self._global_usage = saved.global_usage

    # --- the file ----------------------------------------------------------------------------

    async def refresh(self) -> bool:
        """Reloads the keys file if it changed; returns whether the keys in use changed.

        A file that is missing or not valid is logged (once, until it changes)
        and the keys in use stay.
        """
        stamp, loaded = await asyncio.to_thread(self._read_if_changed)
        if stamp is None:
            return False
        if isinstance(loaded, KeysFile):
            before = self._file
            self._stamp, self._failed_stamp = stamp, None
            self._use(loaded)
            names = {key.name for key in loaded.keys}
            self._windows = {n: w for n, w in self._windows.items() if n in names}
            log.info(json.dumps({"event": "keys_loaded", "file": str(self.path),
                                 **_changes(before, loaded)}, ensure_ascii=False))
            return True
        self._failed_stamp = stamp
        if self._metrics is not None:
            self._metrics.loads.labels(result="failure").inc()
        log.error(json.dumps({"event": "keys_load_failed", "file": str(self.path),
                              "error": str(loaded),
                              "serving": f"the keys loaded at {rfc3339(self._loaded_at)}"},
                             ensure_ascii=False))
        return False

    def _read_if_changed(self):
        """In a worker thread: `(stamp, KeysFile or the error)`, or `(None, None)` if unchanged."""
        try:
            stamp = _stamp(self.path)
        except OSError as error:
            stamp = ("unreadable", error.errno)
            if stamp == self._failed_stamp:
                return None, None
            return stamp, KeysFileError(f"the keys file {self.path} cannot be read "
                                        f"({error.strerror}); put it back")
        if stamp in (self._stamp, self._failed_stamp):
            return None, None
        try:
            return stamp, read_keys(self.path)
        except KeysFileError as error:
            return stamp, error

    def _use(self, loaded: KeysFile) -> None:
        self._file, self._by_id = loaded, loaded.by_id()
        self._loaded_at = self._clock.wall()
        if self._metrics is not None:
            self._metrics.loads.labels(result="success").inc()
            revoked = sum(key.revoked for key in loaded.keys)
            self._metrics.keys.labels(state="active").set(len(loaded.keys) - revoked)
            self._metrics.keys.labels(state="revoked").set(revoked)

    async def keep_fresh(self, interval_s: float) -> None:
        """Every `interval_s` seconds: reloads the keys file if it changed, saves usage."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.refresh()
                await self.save_usage()
            except Exception:  # a bug here must not stop the polling for good
                log.exception("keys: reloading the file or saving usage failed")

    async def close(self) -> None:
        """Saves usage a last time (at shutdown)."""
        await self.save_usage()


def _stamp(path: Path) -> tuple[int, int, int]:
    """`(inode, mtime_ns, size)`: an atomic rename changes the inode."""
    status = path.stat()
    return status.st_ino, status.st_mtime_ns, status.st_size


def _changes(before: KeysFile, after: KeysFile) -> dict:
    """What a reload changed, by key name (for its log line)."""
    old, new = {k.name: k for k in before.keys}, {k.name: k for k in after.keys}
    return {
        "keys": len(after.keys), "added": sorted(set(new) - set(old)),
        "removed": sorted(set(old) - set(new)),
        "revoked": sorted(n for n in set(old) & set(new) if new[n].revoked and not old[n].revoked),
        "changed_limits": sorted(n for n in set(old) & set(new)
                                 if new[n].quota != old[n].quota),
        "global_changed": before.global_quota != after.global_quota}



def _whole_seconds(seconds: float) -> int:
    """Seconds rounded up, at least 1: what `retry-after` says."""
    return max(1, math.ceil(seconds))
