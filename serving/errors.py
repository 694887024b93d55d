"""Errors the service raises, each tied to the status code it is answered with.

Handlers raise these (or `ValueError`); `status_for` is the one place that
turns an exception into a gRPC status (used by `serving.interceptors`), and
`http_status_for` the one place that turns it into an HTTP status (used by
`serving.http_api`).
"""

from __future__ import annotations

import grpc

# The HTTP status answering each gRPC status code (the usual gRPC-to-HTTP mapping, as in
# grpc-gateway), for the codes this service answers with.
HTTP_STATUS = {
    grpc.StatusCode.OK: 200,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 413,  # over a request limit; a full queue is 429
    grpc.StatusCode.CANCELLED: 499,  # the client went away (nginx's convention)
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
}


class ServingError(Exception):
    """Base class; `code` is the status the caller receives, `str(error)` the details.

    `http_status` is the HTTP status when it is not `HTTP_STATUS[code]`.
    """

    code = grpc.StatusCode.INTERNAL
    http_status: int | None = None


class InvalidArgument(ServingError):
    """The request is malformed (bad options, text that is not UTF-8, a body that is not JSON)."""

    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(ServingError):
    """The request names something this server does not have (a glossary)."""

    code = grpc.StatusCode.NOT_FOUND


class LimitExceeded(ServingError):
    """The request is over a server limit (HTTP 413 Content Too Large)."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class QueueFull(LimitExceeded):
    """The batching queue is full: the request may succeed later (HTTP 429 Too Many Requests)."""

    http_status = 429


class ModelUnavailable(ServingError):
    """No model is loaded yet, or the server is shutting down."""

    code = grpc.StatusCode.UNAVAILABLE


class DeadlineExpired(ServingError):
    """The request's deadline passed before it was answered."""

    code = grpc.StatusCode.DEADLINE_EXCEEDED


class Unauthenticated(ServingError):
    """A bearer token is required and the call did not carry the right one."""

    code = grpc.StatusCode.UNAUTHENTICATED


def status_for(error: BaseException) -> tuple[grpc.StatusCode, str]:
    """The status code and details to answer `error` with.

    Unexpected errors become INTERNAL with a generic message: their text may
    hold internals, and the traceback goes to the server log instead.
    """
    if isinstance(error, ServingError):
        return error.code, str(error)
    if isinstance(error, ValueError):
        return grpc.StatusCode.INVALID_ARGUMENT, str(error)
    return grpc.StatusCode.INTERNAL, "internal error; the server log has the details"


def http_status_for(error: BaseException) -> tuple[int, grpc.StatusCode, str]:
    """`(HTTP status, gRPC status code, details)` to answer `error` with over HTTP."""
    code, details = status_for(error)
    http_status = getattr(error, "http_status", None) or HTTP_STATUS.get(code, 500)
    return http_status, code, details
