"""Generated protobuf modules of `proto/nmt_api/v1/` (built, not edited)."""
