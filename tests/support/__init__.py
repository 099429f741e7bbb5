"""Harnesses the tests share: generators, the agreement check, golden cases, vendored data."""
