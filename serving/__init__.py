"""The translation service over `nmt.inference.translator`: gRPC, HTTP/JSON and a page."""
