"""XSched's proof as the generic machinery asks it through the mode contract: who of a
phase's workloads XSched scheduled (``participation``, ``Mode.proof``)."""
