"""The Textual dashboard. The only package that imports textual; it reads
``SessionSnapshot`` objects on a timer and never does I/O on its own thread."""
