"""Exceptions map to the status codes the design names, with useful details."""

import grpc
import pytest

from serving.errors import (
    DeadlineExpired,
    InvalidArgument,
    LimitExceeded,
    ModelUnavailable,
    QueueFull,
    Unauthenticated,
    http_status_for,
    status_for,
)


@pytest.mark.parametrize("error, code", [
    (InvalidArgument("bad"), grpc.StatusCode.INVALID_ARGUMENT),
    (LimitExceeded("over"), grpc.StatusCode.RESOURCE_EXHAUSTED),
    (QueueFull("busy"), grpc.StatusCode.RESOURCE_EXHAUSTED),
    (ModelUnavailable("none"), grpc.StatusCode.UNAVAILABLE),
    (DeadlineExpired("late"), grpc.StatusCode.DEADLINE_EXCEEDED),
    (Unauthenticated("who"), grpc.StatusCode.UNAUTHENTICATED),
    (ValueError("beam_size must be ..."), grpc.StatusCode.INVALID_ARGUMENT),
])
def test_known_errors_keep_their_message(error, code):
    assert status_for(error) == (code, str(error))


def test_unexpected_errors_are_internal_without_leaking_their_text():
    code, details = status_for(RuntimeError("/secret/path failed"))

    assert code == grpc.StatusCode.INTERNAL
    assert "secret" not in details and "server log" in details


@pytest.mark.parametrize("error, status", [
    (InvalidArgument("bad"), 400),
    (ValueError("beam_size must be ..."), 400),
    (Unauthenticated("who"), 401),
    (LimitExceeded("over"), 413),
    (QueueFull("busy"), 429),
    (ModelUnavailable("none"), 503),
    (DeadlineExpired("late"), 504),
    (RuntimeError("/secret/path failed"), 500),
])
def test_http_statuses(error, status):
    http_status, code, details = http_status_for(error)

    assert http_status == status and (code, details) == status_for(error)
