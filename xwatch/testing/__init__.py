"""What xwatch's tests and its benchmarks share, so that neither imports the other
(tests/unit/test_layering_repo.py checks both directions):

- the statistics' checks against a planted truth: ``planted`` (a run of the race or the
  capacity search), ``race_case`` (issue 65's race rebuilt), ``race_coverage``,
  ``capacity_sim``, ``split_width``;
- ``starts``: how phases started, read from a snapshot, with their goals (the
  ``phase_start`` and ``restart`` benchmarks);
- ``serving`` and ``fake_openai``: the server workload's load generator run alone
  against a fake OpenAI server;
- ``fake_mps``: a fake ``nvidia-cuda-mps-control``; ``fleet``: a real local Ray
  cluster of CPU boxes in a loopback-only network namespace (the fleet's tests and its
  speed benchmark).

The benchmarks' command lines and their printed tables stay in ``benchmarks/``; the
tests' fixtures and fakes used by no benchmark stay in ``tests/helpers``. The product
(``xwatch.core``, ``xwatch.cli``, ``xwatch.ui``, ...) never imports this package
(tests/unit/test_layering_repo.py)."""
