"""The session's answer as a stored record (``stored``): computed once from the
phases, kept in the snapshot, and read by every front end; the changes it is made of
are ``analysis.verdict``'s."""
