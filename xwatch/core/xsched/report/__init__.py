"""XSched's part of what xwatch writes out: its report sections and its lines of the
environment (``sections``), its Prometheus series and the upgrade of its records in
older snapshots (``records``). These sit at the export stage (they read the analysis
and render as the report does); the declaration (``xwatch.core.xsched.MODE``) names
them by ``module:attr`` reference."""
