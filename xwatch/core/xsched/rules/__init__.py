"""XSched's rules that the generic machinery asks through the mode contract: who of a
phase's workloads XSched scheduled (``participation``, ``Mode.proof``), and the xserver of
this box's other sessions (``neighbours``), its traces kept out of the other modes'
workloads and its shim's proof in the maps (``isolation``, ``Mode.isolation``)."""
