"""gRPC translation service over `nmt.translator`."""
