"""Generated protobuf modules of `proto/nmt/v1/` (built, not edited)."""
