"""How xwatch keeps XSched 1.2's race at a client's leave from ending a phase (issue 64
goal 4): the preflight probes' hold and one-at-a-time release (``probes``), the mode's
quiet side that release waits for (``quiet``), and the one retry of a phase whose
xserver died anyway before its first measured second (``retry``, run by
``plans.driver.Driver.step``)."""
