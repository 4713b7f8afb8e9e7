"""Modal screens: help and XSched live control."""
