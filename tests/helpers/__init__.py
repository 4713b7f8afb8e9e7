"""Test helpers: deterministic fixtures, process checks, fake XSched."""
