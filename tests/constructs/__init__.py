"""One test file per construct of the language (see README.md)."""
