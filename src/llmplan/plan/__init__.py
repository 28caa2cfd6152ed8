"""llmplan.plan: the plan pipeline, above the catalog and hardware detection.

``document`` (the plan file's pydantic model), ``planfile`` (load/save, migrations),
``overrides`` (``--set``), ``resolve`` (plan -> ``Scenario`` via the catalogs),
``evaluate`` (scenario -> engine result with its system report), ``calibrated`` (a saved
calibration as the plan's efficiency fractions), ``validation`` (pydantic errors as one line).
"""
