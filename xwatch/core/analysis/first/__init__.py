"""Which runs go first when only part of a round fits the budget (pure): an advise
race's candidates (``race``) and a capacity run's loads (``capacity``), the most
informative first. ``plans.driver.fitting`` says how many fit; the order only picks
which runs are bought, never how they are judged."""
