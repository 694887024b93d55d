"""The translation service over `nmt.translator`: gRPC, HTTP/JSON and a page."""
