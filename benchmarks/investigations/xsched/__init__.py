"""Investigations of XSched 1.2 (README.md here links their results pages)."""
