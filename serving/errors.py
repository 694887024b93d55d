"""Errors the service raises, each tied to the gRPC status code it is answered with.

Handlers raise these (or `ValueError`); `serving.interceptors.RequestInterceptor`
is the one place that turns exceptions into statuses.
"""

from __future__ import annotations

import grpc


class ServingError(Exception):
    """Base class; `code` is the status the caller receives, `str(error)` the details."""

    code = grpc.StatusCode.INTERNAL


class InvalidArgument(ServingError):
    """The request is malformed (bad options, text that is not UTF-8)."""

    code = grpc.StatusCode.INVALID_ARGUMENT


class LimitExceeded(ServingError):
    """The request is over a server limit, or the queue is full."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class ModelUnavailable(ServingError):
    """No model is loaded yet, or the server is shutting down."""

    code = grpc.StatusCode.UNAVAILABLE


class DeadlineExpired(ServingError):
    """The request's deadline passed while it waited in the queue."""

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
